-- Lighter galleries: thumbs are also made as AVIF, served to browsers that accept it.
-- Uploads derived before keep their JPEG and WebP thumbs: false here, so they are served as before.

-- Whether the upload's AVIF thumb exists (set with `status = 'ready'`).
ALTER TABLE uploads ADD COLUMN avif_thumb BOOLEAN NOT NULL DEFAULT FALSE;
