-- Renames and moves that views, keys and foreign keys follow, and the
-- drops that take keys and views with a column.
CREATE TABLE a (id int PRIMARY KEY, code text UNIQUE, x int);
CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a, a_code text REFERENCES a (code), y int);
CREATE VIEW bv AS SELECT b.id, a.code FROM b JOIN a ON a.id = b.a_id;
ALTER TABLE a RENAME TO a2;
ALTER TABLE a2 RENAME COLUMN code TO code2;
CREATE SCHEMA s;
ALTER TABLE b SET SCHEMA s;
ALTER TABLE a2 DROP COLUMN x;
ALTER TABLE a2 DROP COLUMN code2 CASCADE;
CREATE TABLE c (id int, a_id int, CONSTRAINT c_fk FOREIGN KEY (a_id) REFERENCES a2 (id));
ALTER TABLE a2 DROP CONSTRAINT a_pkey CASCADE;
ALTER TABLE a2 ADD PRIMARY KEY (id);
CREATE TABLE e (id int, d int, PRIMARY KEY (id, d));
ALTER TABLE e DROP COLUMN d;
CREATE TABLE f (id int UNIQUE, g int, UNIQUE (id, g));
ALTER TABLE f DROP COLUMN g;
CREATE TABLE g (id serial PRIMARY KEY);
ALTER TABLE g ALTER COLUMN id DROP DEFAULT;
ALTER TABLE g ALTER COLUMN id TYPE bigint;
DROP TABLE c;
CREATE TABLE h (id int PRIMARY KEY, self int REFERENCES h);
ALTER TABLE h RENAME TO h2;
