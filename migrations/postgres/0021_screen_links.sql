-- The venue's screen link: at most one per event. Only the digest of its token is kept, as for
-- every bearer token; a screen that opened the link carries the token in its cookie and is
-- looked up by that digest. A new link replaces the old one, revoking clears both columns.
ALTER TABLE events ADD COLUMN screen_token_hash BYTEA;
ALTER TABLE events ADD COLUMN screen_link_at TIMESTAMPTZ;
CREATE UNIQUE INDEX events_screen_token_hash ON events (screen_token_hash) WHERE screen_token_hash IS NOT NULL;
