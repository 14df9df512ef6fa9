-- LIKE … INCLUDING INDEXES builds the source's keys and exclusion
-- constraints anew under the new table's default names.
CREATE TABLE ref (id int PRIMARY KEY);
CREATE TABLE src (id bigint PRIMARY KEY, a int, b int, r int REFERENCES ref, c int CHECK (c > 0), UNIQUE (a, b), CONSTRAINT src_b_named UNIQUE (b));
CREATE TABLE rooms (room int, during tsrange, EXCLUDE USING gist (during WITH &&));
CREATE TABLE l_all (LIKE src INCLUDING ALL);
CREATE TABLE l_idx (LIKE src INCLUDING INDEXES, extra int);
CREATE TABLE l_none (LIKE src);
CREATE TABLE l_rooms (LIKE rooms INCLUDING ALL);
CREATE TABLE l_two (x int PRIMARY KEY, LIKE src INCLUDING CONSTRAINTS);
CREATE TABLE l_after (LIKE src INCLUDING INDEXES, UNIQUE (a, b));
-- An exclusion constraint over an expression is named by it (lower), in
-- its table and in a copy.
CREATE TABLE tags (name text, EXCLUDE USING btree ((lower(name)) WITH =, name WITH =));
CREATE TABLE l_tags (LIKE tags INCLUDING INDEXES);
