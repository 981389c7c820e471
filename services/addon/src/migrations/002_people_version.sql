-- Each change of a person (a new person, a face added to one) takes a new version: a replica keeps the group's people
-- in memory and reads only those changed since, instead of every centroid (1,024 numbers a person) per face job.
-- People are never deleted, so versions above the one a replica has seen are everything it lacks.
CREATE SEQUENCE people_version_seq;
ALTER TABLE people ADD COLUMN version bigint NOT NULL DEFAULT nextval('people_version_seq');
CREATE INDEX people_group_version_idx ON people (group_id, version);
