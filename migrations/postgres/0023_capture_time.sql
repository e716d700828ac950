-- Each upload's capture time (postgres): the time its file states (EXIF, a video's header) when it
-- is not after the upload, else the upload time; and where it comes from. The gallery lists by it
-- (`order=taken`). Uploads stored before: their EXIF time when it was not after the upload, else
-- their upload time (an EXIF time after the upload is dropped, as new uploads drop it).
ALTER TABLE uploads ADD COLUMN captured_at TIMESTAMPTZ;
ALTER TABLE uploads ADD COLUMN captured_from TEXT NOT NULL DEFAULT 'upload';
UPDATE uploads SET
    captured_at = CASE WHEN taken_at IS NOT NULL AND taken_at <= created_at THEN taken_at ELSE created_at END,
    captured_from = CASE WHEN taken_at IS NOT NULL AND taken_at <= created_at THEN 'exif' ELSE 'upload' END,
    taken_at = CASE WHEN taken_at <= created_at THEN taken_at END;
ALTER TABLE uploads ALTER COLUMN captured_at SET NOT NULL;
CREATE INDEX uploads_event_taken ON uploads (event_id, captured_at DESC, id DESC) WHERE deleted_at IS NULL;
