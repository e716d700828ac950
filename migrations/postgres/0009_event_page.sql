-- The guest's event page as the organiser shapes it (PostgreSQL): a welcome text, a cover
-- photo, whether guests may save each other's originals, and a window in which uploads are
-- open. `cover_upload_id` has no foreign key: the cover counts only while its upload is ready,
-- shown and not deleted (read with the event), and deleting an event's uploads must not wait
-- for the event. The window's order (`uploads_open_from` before `uploads_open_until`) is
-- checked where it is changed.

ALTER TABLE events ADD COLUMN welcome_text TEXT;
ALTER TABLE events ADD COLUMN cover_upload_id UUID;
ALTER TABLE events ADD COLUMN guest_downloads BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE events ADD COLUMN uploads_open_from TIMESTAMPTZ;
ALTER TABLE events ADD COLUMN uploads_open_until TIMESTAMPTZ;
