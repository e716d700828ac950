-- A resumable upload whose bytes are all there (sqlite): they are assembled where a one-request
-- upload's would be (the temporary key on a local disk, the final key's completed multipart
-- upload on S3), and the resource stays open until the upload's commit completes it. A request
-- completing it holds the lease meanwhile; one that failed inside (the database or the store
-- failing, not a refusal of the file) leaves it assembled for a retry to complete.
ALTER TABLE resumable_uploads ADD COLUMN assembled BOOLEAN NOT NULL DEFAULT 0;
