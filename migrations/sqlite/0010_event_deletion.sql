-- Events the instance admin deleted (SQLite). The row stays, so its slug is never given out
-- again and its uploads, guests and keys keep their references; every lookup by slug, guest
-- token or organiser session treats it as gone. Its photos are marked deleted in the same
-- transaction, each with a blob job that removes its blobs.
ALTER TABLE events ADD COLUMN deleted_at TEXT;
