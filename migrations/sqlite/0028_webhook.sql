-- The admin's outgoing webhook for photos waiting for review (sqlite). At most one webhook per
-- instance (`id` is always 1); its secret signs every delivery. The `last_*` columns say how the
-- last delivery went, for the admin page.
CREATE TABLE webhook (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    url               TEXT    NOT NULL,
    secret            TEXT    NOT NULL,
    created_at        TEXT    NOT NULL,
    last_attempt_at   TEXT,
    last_status       INTEGER,
    last_error        TEXT,
    last_delivered_at TEXT
);

-- Deliveries to make: at most one pending per event (a burst of photos makes one POST), written
-- in the transaction that put a photo up for review, due `run_after` (the coalescing delay, then
-- the backoff; while claimed by instance `claimed_by`, the lease's end). `again`: a photo came in while the delivery was
-- being sent, so it is due once more instead of done.
CREATE TABLE webhook_deliveries (
    event_id   BLOB    NOT NULL PRIMARY KEY REFERENCES events (id),
    attempts   INTEGER NOT NULL DEFAULT 0,
    run_after  TEXT    NOT NULL,
    claim      BLOB,
    claimed_by BLOB,
    again      BOOLEAN NOT NULL DEFAULT FALSE,
    last_error TEXT,
    created_at TEXT    NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (run_after);
