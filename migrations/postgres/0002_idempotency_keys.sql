-- Idempotency-Key on every authenticated write other than uploads (PostgreSQL).
-- A key is scoped to (principal, method, path); the path is kept as its SHA-256 so the
-- primary key stays small whatever the path.
CREATE TABLE idempotency_keys (
    principal        TEXT NOT NULL,
    method           TEXT NOT NULL,
    path_digest      BYTEA NOT NULL,
    key              TEXT NOT NULL,
    fingerprint      BYTEA NOT NULL,
    claim_token      UUID NOT NULL,
    lease_expires_at TIMESTAMPTZ NOT NULL,
    status           INTEGER,
    location         TEXT,
    content_type     TEXT,
    body             BYTEA,
    created_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ,
    PRIMARY KEY (principal, method, path_digest, key)
);
-- The sweep walks completed keys by age, and abandoned claims by lease.
CREATE INDEX idempotency_keys_finished ON idempotency_keys (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX idempotency_keys_abandoned ON idempotency_keys (lease_expires_at) WHERE finished_at IS NULL;
