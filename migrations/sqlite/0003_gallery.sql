-- The gallery (SQLite): derivative jobs, likes, comments and the live feed.

-- One job per upload that still needs its thumb and preview. A worker claims a job by
-- setting `claim` and pushing `run_after` to the end of its lease; a job whose worker died
-- becomes due again when the lease ends. Done jobs are deleted with the upload's status
-- change, in one transaction.
CREATE TABLE derivative_jobs (
    upload_id  BLOB PRIMARY KEY NOT NULL REFERENCES uploads (id),
    attempts   INTEGER NOT NULL DEFAULT 0,
    run_after  TEXT NOT NULL,
    claim      BLOB,
    last_error TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX derivative_jobs_due ON derivative_jobs (run_after);

CREATE TABLE likes (
    upload_id  BLOB NOT NULL REFERENCES uploads (id),
    guest_id   BLOB NOT NULL REFERENCES guests (id),
    created_at TEXT NOT NULL,
    PRIMARY KEY (upload_id, guest_id)
);

CREATE TABLE comments (
    id         BLOB PRIMARY KEY NOT NULL,
    upload_id  BLOB NOT NULL REFERENCES uploads (id),
    guest_id   BLOB NOT NULL REFERENCES guests (id),
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX comments_upload ON comments (upload_id, id);

-- What slideshows are told: appended in the transaction that makes an upload ready, hides,
-- shows or deletes it; every instance polls the recent tail. Old rows are swept.
CREATE TABLE live_feed (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   BLOB NOT NULL,
    kind       TEXT NOT NULL,
    upload_id  BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX live_feed_created ON live_feed (created_at);

-- Uploads stored before derivatives existed get their job now.
INSERT INTO derivative_jobs (upload_id, run_after, created_at)
SELECT id, created_at, created_at FROM uploads WHERE status = 'processing' AND deleted_at IS NULL;
