-- Re-picked photos: a guest's client asks which of its files' SHA-256 hashes the guest has
-- stored already (`POST …/uploads/known`), so the same bytes are not sent, stored and charged
-- twice. Only the guest's own uploads that are not deleted are looked up.
CREATE INDEX uploads_guest_sha256 ON uploads (guest_id, sha256) WHERE deleted_at IS NULL;
