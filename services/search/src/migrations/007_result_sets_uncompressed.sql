-- A stored set's ids and scores are kept out of line without compression (issue 33): 10,000 ids are about 370 KB
-- of random hex that pglz shrank by about a tenth (417 → 376 KB a set at 100,000 assets) for about 10 ms of CPU on
-- every search that stores a full set, a third of the statement that matches, ranks and stores it. Rows already
-- stored keep their form; every reader reads both.
ALTER TABLE result_sets ALTER COLUMN ids SET STORAGE EXTERNAL, ALTER COLUMN scores SET STORAGE EXTERNAL;
