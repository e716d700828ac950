-- Rejecting a photo hides it with a reason its uploader reads on their own tile: NULL while the
-- photo is not rejected, '' for a rejection without a reason. Showing the photo again clears it.
ALTER TABLE uploads ADD COLUMN rejected_reason TEXT;
-- Whether blocking its guest hid the photo: unblocking "and show their photos again" shows
-- exactly these, not the ones the organiser hid or rejected by hand.
ALTER TABLE uploads ADD COLUMN hidden_by_block BOOLEAN NOT NULL DEFAULT FALSE;
-- Photos of guests blocked before this column existed count as hidden by the block.
UPDATE uploads SET hidden_by_block = TRUE
 WHERE hidden = TRUE AND deleted_at IS NULL
   AND guest_id IN (SELECT id FROM guests WHERE blocked_at IS NOT NULL);
