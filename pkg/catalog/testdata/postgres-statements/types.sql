-- Columns typed by domains and composite types, which the catalog knows
-- by the names format_type prints: renames and SET SCHEMA of the type or
-- of its schema follow into them, DROP … CASCADE of either takes them.
CREATE DOMAIN email AS text CHECK (VALUE LIKE '%@%');
CREATE TYPE pair AS (x int, y int);
CREATE SCHEMA s3;
CREATE DOMAIN s3.code AS varchar(10);
CREATE TABLE u (id int, e email, e2 email[], p pair, c s3.code);
ALTER DOMAIN email RENAME TO email_address;
ALTER TYPE pair RENAME TO coords;
CREATE TABLE u2 (id int, c s3.code, d email_address);
DROP DOMAIN email_address CASCADE;
DROP SCHEMA s3 CASCADE;
CREATE SCHEMA s4;
CREATE DOMAIN s4.code AS varchar(10);
CREATE TYPE s4.pt AS (x int, y int);
CREATE DOMAIN "Weird.Name" AS int;
CREATE TABLE w (a s4.code, b s4.pt[], c "Weird.Name", d text, e varchar(3));
CREATE VIEW wv AS SELECT a, c FROM w;
ALTER SCHEMA s4 RENAME TO s5;
ALTER DOMAIN "Weird.Name" RENAME TO "Other.Name";
ALTER TYPE s5.pt SET SCHEMA public;
CREATE SCHEMA s6;
CREATE DOMAIN s6.gone AS int;
CREATE TABLE w2 (id int, g s6.gone);
CREATE VIEW w2v AS SELECT id, g FROM w2;
DROP DOMAIN s6.gone CASCADE;
CREATE DOMAIN pub AS text;
CREATE TABLE w3 (p pub, q pub);
DROP DOMAIN pub CASCADE;
