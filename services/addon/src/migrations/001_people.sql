-- face_recognition (CONTRACT §6): the people of each group, each a running mean of the face embeddings assigned to
-- it (clustered incrementally), and which person each face of each original was given (a re-run keeps them).
CREATE TABLE people (
  group_id  integer NOT NULL,
  person_id text NOT NULL,
  centroid  real[] NOT NULL,
  faces     integer NOT NULL,
  PRIMARY KEY (group_id, person_id)
);

CREATE TABLE face_assignments (
  group_id   integer NOT NULL,
  asset_id   text NOT NULL,
  checksum   text NOT NULL,
  face_index integer NOT NULL,
  person_id  text NOT NULL,
  PRIMARY KEY (group_id, asset_id, checksum, face_index)
);
