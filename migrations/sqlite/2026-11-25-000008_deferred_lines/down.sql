-- Undoes up.sql. Refused while a line waits (it would be money lost): apply them first, with no
-- server posting.
CREATE TEMPORARY TABLE deferred_lines_left (waiting BIGINT CHECK (waiting = 0));
INSERT INTO deferred_lines_left SELECT count(*) FROM deferred_lines;
DROP TABLE deferred_lines_left;
DROP TABLE deferred_lines;
