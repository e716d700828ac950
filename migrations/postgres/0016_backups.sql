-- Backups (PostgreSQL): one row per `confetti backup` that finished, written by the command into
-- the database it backed up, so the admin page can say when the photos were last kept safe.
-- The snapshot a backup takes is made before its own row exists: a restored database holds
-- the backups before it, not itself.
CREATE TABLE backups (
    id            UUID PRIMARY KEY NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    finished_at   TIMESTAMPTZ NOT NULL,
    -- The directory or `s3://` URL it went to.
    destination   TEXT NOT NULL,
    -- Whether it holds the database: false here, where `pg_dump` keeps the database.
    with_database BOOLEAN NOT NULL,
    -- Uploads in the snapshot (not deleted), and the blobs and bytes the backup holds for it.
    uploads       BIGINT NOT NULL CHECK (uploads >= 0),
    blobs         BIGINT NOT NULL CHECK (blobs >= 0),
    bytes         BIGINT NOT NULL CHECK (bytes >= 0),
    -- What this run copied; the rest was there from an earlier backup.
    copied_blobs  BIGINT NOT NULL CHECK (copied_blobs >= 0),
    copied_bytes  BIGINT NOT NULL CHECK (copied_bytes >= 0),
    -- Blobs the snapshot names that the photo store did not have (and that were not deleted since).
    missing_blobs BIGINT NOT NULL CHECK (missing_blobs >= 0)
);
CREATE INDEX backups_finished_at ON backups (finished_at);
