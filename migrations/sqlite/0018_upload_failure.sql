-- Why an upload's processing failed (its decoder could not read it, or its media worker crashed
-- or ran out of its memory or time twice), in words for the organiser and the uploader.
ALTER TABLE uploads ADD COLUMN failure TEXT;
