-- Organiser sessions expire (SQLite). A session is valid while `expires_at` is in the future;
-- the login that creates a session deletes the expired ones.
--
-- SQLite cannot add a NOT NULL column with a computed default, so the column starts empty
-- (an empty text sorts before every time: a row without an expiry counts as expired), and the
-- sessions that exist today get the default lifetime of seven days from now, in the format
-- sqlx writes (RFC 3339, UTC, `+00:00`), so times compare as text.
ALTER TABLE organiser_sessions ADD COLUMN expires_at TEXT NOT NULL DEFAULT '';
UPDATE organiser_sessions SET expires_at = strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now', '+7 days');
CREATE INDEX organiser_sessions_expires_at ON organiser_sessions (expires_at);
