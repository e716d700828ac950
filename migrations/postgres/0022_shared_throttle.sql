-- The guessing throttle and the join budgets (postgres), kept in the database so that every
-- instance sharing it counts the same attempts. Times in milliseconds since the epoch; rows
-- that say nothing a fresh one would not are swept (`Db::sweep_throttle`).
CREATE TABLE guess_counts (
    purpose         TEXT   NOT NULL,
    client          TEXT   NOT NULL,
    event_id        UUID   NOT NULL,
    failures        BIGINT NOT NULL,
    last_attempt_ms BIGINT NOT NULL,
    locked_until_ms BIGINT,
    PRIMARY KEY (purpose, client, event_id)
);
CREATE INDEX guess_counts_last_attempt ON guess_counts (last_attempt_ms);

CREATE TABLE join_budgets (
    client     TEXT             NOT NULL,
    event_id   UUID             NOT NULL,
    joins_left DOUBLE PRECISION NOT NULL,
    at_ms      BIGINT           NOT NULL,
    PRIMARY KEY (client, event_id)
);
