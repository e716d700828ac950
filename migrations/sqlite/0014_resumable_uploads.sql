-- Resumable uploads (sqlite): a file a guest sends in pieces, by the IETF resumable-upload
-- protocol. The row is the upload resource: whose it is, the key and name the photo will get,
-- how many of its bytes are kept, and where (a file in the local store's `partial/` directory,
-- or an S3 multipart upload with its parts' ids and a tail object under a part's size). The
-- row is also the cleanup's job: a resource cancelled, or open and expired, is found here until
-- its bytes are removed. A completed one stays as a tombstone until it expires, so that a
-- retry after a lost answer is answered with the stored upload.
CREATE TABLE resumable_uploads (
    -- The resource, and the id the upload gets once stored.
    id               BLOB PRIMARY KEY NOT NULL,
    event_id         BLOB NOT NULL,
    guest_id         BLOB NOT NULL,
    client_upload_id BLOB NOT NULL,
    filename         TEXT NOT NULL,
    caption          TEXT,
    length           BIGINT NOT NULL CHECK (length >= 0),
    -- Bytes kept: a client never sends them again.
    upload_offset    BIGINT NOT NULL DEFAULT 0 CHECK (upload_offset >= 0 AND upload_offset <= length),
    -- The draft's interop version the resource was created with (NULL: the current rules).
    interop          INTEGER,
    state            TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'completed', 'cancelled')),
    -- S3: the multipart upload (NULL before the first part), the part size, the parts' ids as
    -- a JSON array of strings, and how many bytes after the last part the tail object holds.
    multipart_id     TEXT,
    part_size        BIGINT NOT NULL,
    parts            TEXT NOT NULL DEFAULT '[]',
    tail_bytes       BIGINT NOT NULL DEFAULT 0,
    -- The request appending right now (or the sweep removing it), until its lease ends.
    lock_token       BLOB,
    lock_until       TEXT,
    created_at       TEXT NOT NULL,
    expires_at       TEXT NOT NULL
);
-- One open resource per key: two creations racing end with the same resource.
CREATE UNIQUE INDEX resumable_uploads_open_key ON resumable_uploads (client_upload_id) WHERE state = 'open';
CREATE INDEX resumable_uploads_expires ON resumable_uploads (expires_at);
CREATE INDEX resumable_uploads_guest ON resumable_uploads (guest_id);
