-- Host modes (SQLite): a review gate before guests' photos go public, a private gallery
-- ("drop box": guests see their own photos only) and a gallery that opens at a set time.
-- Photos already stored stay approved: switching the gate on later hides nothing.

ALTER TABLE events ADD COLUMN review_uploads BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE events ADD COLUMN gallery TEXT NOT NULL DEFAULT 'everyone' CHECK (gallery IN ('everyone', 'own_uploads'));
ALTER TABLE events ADD COLUMN gallery_opens_at TEXT;

ALTER TABLE uploads ADD COLUMN review TEXT NOT NULL DEFAULT 'approved' CHECK (review IN ('pending', 'approved'));
-- The organiser's "pending" list.
CREATE INDEX uploads_pending ON uploads (event_id, id) WHERE review = 'pending' AND deleted_at IS NULL;
