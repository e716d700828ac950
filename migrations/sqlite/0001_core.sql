-- Events, guests, organiser sessions and uploads (SQLite).
-- Ids are UUIDs (v7, time-ordered) stored as 16-byte blobs, so ORDER BY id is creation order.

CREATE TABLE events (
    id                      BLOB PRIMARY KEY NOT NULL,
    slug                    TEXT NOT NULL UNIQUE,
    name                    TEXT NOT NULL,
    join_token              TEXT NOT NULL,
    organiser_password_hash TEXT NOT NULL,
    guest_quota_bytes       INTEGER NOT NULL CHECK (guest_quota_bytes >= 0),
    uploads_open            BOOLEAN NOT NULL DEFAULT TRUE,
    created_at              TEXT NOT NULL
);

CREATE TABLE guests (
    id           BLOB PRIMARY KEY NOT NULL,
    event_id     BLOB NOT NULL REFERENCES events (id),
    display_name TEXT NOT NULL,
    token_hash   BLOB NOT NULL UNIQUE,
    used_bytes   INTEGER NOT NULL DEFAULT 0 CHECK (used_bytes >= 0),
    created_at   TEXT NOT NULL
);
CREATE INDEX guests_event ON guests (event_id);

CREATE TABLE organiser_sessions (
    token_hash BLOB PRIMARY KEY NOT NULL,
    event_id   BLOB NOT NULL REFERENCES events (id),
    created_at TEXT NOT NULL
);

CREATE TABLE uploads (
    id               BLOB PRIMARY KEY NOT NULL,
    event_id         BLOB NOT NULL REFERENCES events (id),
    guest_id         BLOB NOT NULL REFERENCES guests (id),
    client_upload_id BLOB,
    filename         TEXT NOT NULL,
    caption          TEXT,
    content_type     TEXT NOT NULL,
    bytes            INTEGER NOT NULL,
    sha256           TEXT NOT NULL,
    width            INTEGER NOT NULL,
    height           INTEGER NOT NULL,
    taken_at         TEXT,
    created_at       TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'processing',
    hidden           BOOLEAN NOT NULL DEFAULT FALSE,
    deleted_at       TEXT
);
-- One global index: a client's upload id names one upload on the whole server.
CREATE UNIQUE INDEX uploads_client_upload_id ON uploads (client_upload_id) WHERE client_upload_id IS NOT NULL;
-- The event listing walks this newest first (keyset on id).
CREATE INDEX uploads_event_listing ON uploads (event_id, id) WHERE deleted_at IS NULL;
CREATE INDEX uploads_guest ON uploads (guest_id);
