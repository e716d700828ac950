-- Work on an upload's blobs that must follow a commit: moving a new upload's original from
-- its temporary key to its final one, removing a deleted upload's blobs, and removing the
-- derivatives made for an upload deleted while they were being made. A job is written
-- in the transaction whose commit it follows, claimed under a lease (`claim`, with the lease's
-- end in `run_after`), and deleted when done; a failed try is given back with a later
-- `run_after`. One pending job per upload and kind.

CREATE TABLE blob_jobs (
    upload_id  UUID NOT NULL REFERENCES uploads (id),
    kind       TEXT NOT NULL CHECK (kind IN ('finalize', 'delete', 'delete_derivatives')),
    event_id   UUID NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    run_after  TIMESTAMPTZ NOT NULL,
    claim      UUID,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (upload_id, kind)
);
CREATE INDEX blob_jobs_due ON blob_jobs (run_after);

-- Deleted uploads whose blobs an earlier version may have left behind.
INSERT INTO blob_jobs (upload_id, kind, event_id, run_after, created_at)
SELECT id, 'delete', event_id, deleted_at, deleted_at FROM uploads WHERE deleted_at IS NOT NULL;
