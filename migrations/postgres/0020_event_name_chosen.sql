-- Whether the event's name was chosen by a person: false for the demo event a fresh server
-- makes ("Demo event"), so its organiser's page asks for a name on the first visit; true for
-- every event created with a name, and once a name is set.
ALTER TABLE events ADD COLUMN name_chosen BOOLEAN NOT NULL DEFAULT TRUE;
