-- Several instances share one database and one photo store. Each running instance has a row
-- here and renews its heartbeat; one whose heartbeat stopped has died, and another instance
-- cleans up after it at once: the uploads it was receiving (their bytes in the store, found
-- by key and, on S3, by multipart upload id: not every S3-compatible server can list those)
-- and the jobs it had claimed.

CREATE TABLE instances (
    id           BLOB PRIMARY KEY NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
);

-- An upload being received: where its bytes go and, for a multipart upload, its id. Written
-- before the first byte is stored, deleted in the transaction that commits the upload (or
-- when it is refused or abandoned).
CREATE TABLE staged_uploads (
    upload_id    BLOB PRIMARY KEY NOT NULL,
    instance_id  BLOB NOT NULL,
    blob_key     TEXT NOT NULL,
    multipart_id TEXT,
    started_at   TEXT NOT NULL
);
CREATE INDEX staged_uploads_instance ON staged_uploads (instance_id);

-- Work one instance at a time does (the sweeps): held by `holder` until `until`.
CREATE TABLE leases (
    name   TEXT PRIMARY KEY NOT NULL,
    holder BLOB NOT NULL,
    until  TEXT NOT NULL
);

-- Which instance holds a job's claim, so a stopping or dead instance's claims are given back
-- at once instead of when their lease ends.
ALTER TABLE derivative_jobs ADD COLUMN claimed_by BLOB;
ALTER TABLE blob_jobs ADD COLUMN claimed_by BLOB;
