-- Organiser sessions expire (PostgreSQL). A session is valid while `expires_at` is in the
-- future; the login that creates a session deletes the expired ones. The sessions that exist
-- today get the default lifetime of seven days from now; new ones always name their expiry.
ALTER TABLE organiser_sessions ADD COLUMN expires_at TIMESTAMPTZ NOT NULL DEFAULT now() + interval '7 days';
ALTER TABLE organiser_sessions ALTER COLUMN expires_at DROP DEFAULT;
CREATE INDEX organiser_sessions_expires_at ON organiser_sessions (expires_at);
