-- Keys and their default names: duplicates a CREATE TABLE declares,
-- names past 63 bytes, keys dropped with a column, renamed, added to a
-- partitioned table, and foreign keys to one.
CREATE TABLE a (id int PRIMARY KEY, code text, x int, y int);
CREATE TABLE b (id int, a_id int REFERENCES a, a_id2 int REFERENCES a (id), UNIQUE (a_id, a_id2), UNIQUE (a_id, a_id2));
ALTER TABLE b ADD FOREIGN KEY (a_id) REFERENCES a;
ALTER TABLE b ADD FOREIGN KEY (a_id) REFERENCES a;
CREATE TABLE this_is_a_very_long_table_name_that_goes_past_the_limit_of_names (this_is_a_very_long_column_name_that_also_goes_past_the_limit int UNIQUE, other_long_column_name_for_the_key int REFERENCES a);
ALTER TABLE a ADD CONSTRAINT a_code_uq UNIQUE NULLS NOT DISTINCT (code);
ALTER TABLE a ADD UNIQUE (x, y);
ALTER TABLE a DROP COLUMN y;
ALTER TABLE b RENAME COLUMN a_id TO a_ref;
ALTER TABLE b ADD COLUMN c_id int REFERENCES a ON DELETE SET NULL;
ALTER TABLE b DROP CONSTRAINT IF EXISTS no_such_constraint;



CREATE TABLE par (id int PRIMARY KEY, u int UNIQUE);
CREATE TABLE chi (extra int) INHERITS (par);
CREATE TABLE pp (id int, k int, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE pp1 PARTITION OF pp FOR VALUES IN (1);
CREATE TABLE refpp (id int, k int, FOREIGN KEY (id, k) REFERENCES pp);
ALTER TABLE pp ADD COLUMN z int;
ALTER TABLE pp ADD UNIQUE (z, k);
CREATE TABLE d (id int CONSTRAINT d_pk PRIMARY KEY, b_id int, CONSTRAINT d_b FOREIGN KEY (b_id) REFERENCES a (id) DEFERRABLE INITIALLY DEFERRED);
ALTER TABLE d ALTER CONSTRAINT d_b NOT DEFERRABLE;
ALTER TABLE d RENAME CONSTRAINT d_pk TO d_primary;
ALTER INDEX d_primary RENAME TO d_primary_key;
CREATE TABLE e (a int, b int, CHECK (a > 0), CHECK (a > 1), CONSTRAINT e_named CHECK (b > a));
ALTER TABLE e ADD PRIMARY KEY (a), ADD UNIQUE (b);
ALTER TABLE e DROP CONSTRAINT e_pkey;
CREATE TABLE a1 (id int PRIMARY KEY UNIQUE);
CREATE TABLE a2 (id int UNIQUE PRIMARY KEY);
CREATE TABLE a3 (id int UNIQUE, CONSTRAINT a3_named UNIQUE (id));
CREATE TABLE a4 (id int, x int, UNIQUE (id, x), UNIQUE (x, id), PRIMARY KEY (id, x));
CREATE TABLE a5 (id serial PRIMARY KEY, UNIQUE (id));
CREATE TABLE a6 (id int CONSTRAINT first_name UNIQUE, CONSTRAINT second_name UNIQUE (id));
