-- Co-organisers and blocked guests (PostgreSQL).
--
-- A co-organiser login is a second password for an event's dashboard, with a label the
-- organiser gave it ("Best man"). Revoking it sets `revoked_at` and ends its sessions in the
-- same transaction. A session names the login it came from; NULL is the event's own password.
CREATE TABLE organiser_logins (
    id            UUID PRIMARY KEY,
    event_id      UUID NOT NULL REFERENCES events (id),
    label         TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    revoked_at    TIMESTAMPTZ
);
CREATE INDEX organiser_logins_event ON organiser_logins (event_id) WHERE revoked_at IS NULL;

ALTER TABLE organiser_sessions ADD COLUMN login_id UUID REFERENCES organiser_logins (id);
CREATE INDEX organiser_sessions_login ON organiser_sessions (login_id) WHERE login_id IS NOT NULL;

-- A blocked guest's new uploads, likes and comments are refused; blocking hid their photos.
ALTER TABLE guests ADD COLUMN blocked_at TIMESTAMPTZ;
