-- Videos (SQLite): an upload is a photo or a video. A video has its duration from its
-- container's header (NULL when the container does not say) and, once the derivative worker
-- extracted a frame, a poster (its thumb and preview); a video whose poster could not be made
-- is still ready and playable.

ALTER TABLE uploads ADD COLUMN kind TEXT NOT NULL DEFAULT 'photo' CHECK (kind IN ('photo', 'video'));
-- Milliseconds; NULL for photos.
ALTER TABLE uploads ADD COLUMN duration_ms BIGINT CHECK (duration_ms IS NULL OR duration_ms >= 0);
-- Whether a video's thumb and preview exist (set with `status = 'ready'`); photos: unused.
ALTER TABLE uploads ADD COLUMN poster BOOLEAN NOT NULL DEFAULT FALSE;
