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
-- A column's rename follows into the expressions that read it: checks
-- (bare and qualified by the table), generated columns, index
-- expressions and predicates, and partition keys, the parent's and a
-- sub-partition's; a column whose name another's extends stays.
CREATE TABLE m (qty int CHECK (qty > 0), qty_max int, price numeric, CONSTRAINT m_qty_le CHECK (m.qty <= qty_max),
  total numeric GENERATED ALWAYS AS (qty * price) STORED);
CREATE INDEX m_expr ON m ((qty * 2), qty_max) WHERE qty > 1;
ALTER TABLE m RENAME COLUMN qty TO "Quantity";
ALTER TABLE m RENAME COLUMN price TO unit_price;
CREATE TABLE pk (region text, at date, n int) PARTITION BY LIST (lower(region));
CREATE TABLE pk_eu PARTITION OF pk FOR VALUES IN ('eu') PARTITION BY RANGE (at);
CREATE TABLE pk_eu_2024 PARTITION OF pk_eu FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
ALTER TABLE pk RENAME COLUMN region TO area;
ALTER TABLE pk RENAME COLUMN at TO day;
-- Qualified by the table's name, then the table renamed.
CREATE TABLE q (a int CHECK (public.q.a > 0), b int GENERATED ALWAYS AS (q.a * 2) STORED) PARTITION BY RANGE ((q.a + 1));
CREATE TABLE q1 PARTITION OF q FOR VALUES FROM (0) TO (10);
CREATE INDEX ON q ((q.a + 1)) WHERE q.a > 3;
ALTER TABLE q RENAME TO q_renamed;
-- Exclusion constraints: elements named and by expression, INCLUDE and
-- WHERE, renamed; and one made without a name.
CREATE TABLE booking (room int, during tsrange, note text, cancelled boolean,
  CONSTRAINT booking_no_overlap EXCLUDE USING gist (during WITH &&, (int4range(room, room + 1)) WITH OPERATOR(pg_catalog.&&)) INCLUDE (note) WHERE (NOT booking.cancelled),
  EXCLUDE USING btree ((lower(note)) WITH =));
ALTER TABLE booking RENAME COLUMN cancelled TO is_cancelled;
ALTER TABLE booking RENAME COLUMN note TO memo;
ALTER TABLE booking RENAME COLUMN room TO room_id;
ALTER TABLE booking DROP COLUMN is_cancelled CASCADE;
CREATE TABLE booking2 (a int, b text, EXCLUDE USING btree (a WITH =) INCLUDE (b));
ALTER TABLE booking2 DROP COLUMN b;
