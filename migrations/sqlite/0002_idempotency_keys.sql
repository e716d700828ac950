-- Idempotency-Key on every authenticated write other than uploads (SQLite).
-- A key is scoped to (principal, method, path); the path is kept as its SHA-256 so the
-- primary key stays small whatever the path.
CREATE TABLE idempotency_keys (
    principal        TEXT NOT NULL,
    method           TEXT NOT NULL,
    path_digest      BLOB NOT NULL,
    key              TEXT NOT NULL,
    fingerprint      BLOB NOT NULL,
    claim_token      BLOB NOT NULL,
    lease_expires_at TEXT NOT NULL,
    status           INTEGER,
    location         TEXT,
    content_type     TEXT,
    body             BLOB,
    created_at       TEXT NOT NULL,
    finished_at      TEXT,
    PRIMARY KEY (principal, method, path_digest, key)
);
-- The sweep walks completed keys by age, and abandoned claims by lease.
CREATE INDEX idempotency_keys_finished ON idempotency_keys (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX idempotency_keys_abandoned ON idempotency_keys (lease_expires_at) WHERE finished_at IS NULL;
