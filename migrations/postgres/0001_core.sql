-- Events, guests, organiser sessions and uploads (PostgreSQL).
-- Ids are UUIDs (v7, time-ordered), so ORDER BY id is creation order.

CREATE TABLE events (
    id                      UUID PRIMARY KEY,
    slug                    TEXT NOT NULL UNIQUE,
    name                    TEXT NOT NULL,
    join_token              TEXT NOT NULL,
    organiser_password_hash TEXT NOT NULL,
    guest_quota_bytes       BIGINT NOT NULL CHECK (guest_quota_bytes >= 0),
    uploads_open            BOOLEAN NOT NULL DEFAULT TRUE,
    created_at              TIMESTAMPTZ NOT NULL
);

CREATE TABLE guests (
    id           UUID PRIMARY KEY,
    event_id     UUID NOT NULL REFERENCES events (id),
    display_name TEXT NOT NULL,
    token_hash   BYTEA NOT NULL UNIQUE,
    used_bytes   BIGINT NOT NULL DEFAULT 0 CHECK (used_bytes >= 0),
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX guests_event ON guests (event_id);

CREATE TABLE organiser_sessions (
    token_hash BYTEA PRIMARY KEY,
    event_id   UUID NOT NULL REFERENCES events (id),
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE uploads (
    id               UUID PRIMARY KEY,
    event_id         UUID NOT NULL REFERENCES events (id),
    guest_id         UUID NOT NULL REFERENCES guests (id),
    client_upload_id UUID,
    filename         TEXT NOT NULL,
    caption          TEXT,
    content_type     TEXT NOT NULL,
    bytes            BIGINT NOT NULL,
    sha256           TEXT NOT NULL,
    width            INTEGER NOT NULL,
    height           INTEGER NOT NULL,
    taken_at         TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    status           TEXT NOT NULL DEFAULT 'processing',
    hidden           BOOLEAN NOT NULL DEFAULT FALSE,
    deleted_at       TIMESTAMPTZ
);
-- One global index: a client's upload id names one upload on the whole server.
CREATE UNIQUE INDEX uploads_client_upload_id ON uploads (client_upload_id) WHERE client_upload_id IS NOT NULL;
-- The event listing walks this newest first (keyset on id).
CREATE INDEX uploads_event_listing ON uploads (event_id, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX uploads_guest ON uploads (guest_id);
