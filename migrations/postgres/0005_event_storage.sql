-- An event's total storage, all guests together (PostgreSQL): joining again must not mint
-- another guest quota without end. `used_bytes` is charged and refunded with the guests'
-- own counters, in the same transactions.

ALTER TABLE events ADD COLUMN storage_cap_bytes BIGINT NOT NULL DEFAULT 107374182400 CHECK (storage_cap_bytes >= 0);
ALTER TABLE events ADD COLUMN used_bytes BIGINT NOT NULL DEFAULT 0 CHECK (used_bytes >= 0);

UPDATE events SET used_bytes = (SELECT COALESCE(SUM(g.used_bytes), 0) FROM guests g WHERE g.event_id = events.id);
-- An event already past the default keeps what it has; it cannot grow further.
UPDATE events SET storage_cap_bytes = GREATEST(storage_cap_bytes, used_bytes);
