-- Lighter galleries (PostgreSQL): thumbs are also made as WebP, and each upload
-- carries a placeholder (a ThumbHash of its thumb) that the page draws while the thumb loads.
-- Uploads derived before keep JPEG only: false and NULL here, so they are served as JPEG.

-- Whether the upload's WebP thumb exists (set with `status = 'ready'`).
ALTER TABLE uploads ADD COLUMN webp_thumb BOOLEAN NOT NULL DEFAULT FALSE;
-- The ThumbHash's bytes (about 25); NULL until the derivatives are made.
ALTER TABLE uploads ADD COLUMN placeholder BYTEA CHECK (placeholder IS NULL OR octet_length(placeholder) <= 64);
