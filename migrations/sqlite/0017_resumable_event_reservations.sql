-- Open resumable uploads reserve their declared length against their event's storage cap, as
-- they do against their guest's quota (sqlite): every creation and every upload's commit sums an
-- event's open resources, found through this index.
CREATE INDEX resumable_uploads_event_open ON resumable_uploads (event_id) WHERE state = 'open';
