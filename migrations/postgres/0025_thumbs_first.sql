-- Thumbs first: a photo is shown as soon as its small thumb exists; its preview and AVIF thumb
-- follow. A derivative job has two phases, 1 (the thumb and its placeholder) and 2 (the rest);
-- every due phase-1 job is claimed before any phase-2 job. The job row stays one per upload:
-- finishing phase 1 moves it to phase 2 (attempts start again), finishing phase 2 deletes it.
ALTER TABLE derivative_jobs ADD COLUMN phase INTEGER NOT NULL DEFAULT 1;
CREATE INDEX derivative_jobs_phase_due ON derivative_jobs (phase, run_after);

-- True while the upload is `ready` (its thumb shown) and its preview is still being made: its
-- preview URL then answers with the thumb (a redirect). Uploads derived before have both.
ALTER TABLE uploads ADD COLUMN preview_pending BOOLEAN NOT NULL DEFAULT FALSE;
