-- The guestbook (sqlite): short messages guests leave for the hosts, moderated like photos.
-- `review` is 'pending' for a message written while the event's review gate was on, until the
-- organiser approves it; `hidden` is the organiser's; a deleted message is gone (no tombstone:
-- its `Idempotency-Key` answer is what a late retry gets).
CREATE TABLE guestbook_messages (
    id         BLOB PRIMARY KEY NOT NULL,
    event_id   BLOB NOT NULL REFERENCES events (id),
    guest_id   BLOB NOT NULL REFERENCES guests (id),
    text       TEXT NOT NULL,
    review     TEXT NOT NULL,
    hidden     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT NOT NULL
);
CREATE INDEX guestbook_messages_event ON guestbook_messages (event_id, id);
