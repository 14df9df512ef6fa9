-- Renames and schema moves over what reads the columns (checks, NO
-- INHERIT and NOT VALID checks, generated columns, partial indexes,
-- partitions' checks, views and materialized views), and the sequences a
-- table owns, which move with it to another schema.
CREATE TABLE parent (id int PRIMARY KEY, amount numeric CHECK (amount >= 0), kind text CONSTRAINT kind_ok CHECK (kind <> '') NO INHERIT);
CREATE TABLE child (extra int CHECK (extra > 0)) INHERITS (parent);
ALTER TABLE parent ADD CONSTRAINT later_check CHECK (id > 0) NOT VALID;
ALTER TABLE parent RENAME COLUMN amount TO total;
CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, qty int, price numeric(10,2),
  total numeric GENERATED ALWAYS AS (qty * price) STORED, status text DEFAULT 'new' CHECK (status IN ('new', 'paid')));
ALTER TABLE orders ALTER COLUMN status SET DEFAULT 'paid';
ALTER TABLE orders RENAME TO purchase_orders;
ALTER TABLE purchase_orders RENAME COLUMN status TO state;
CREATE UNIQUE INDEX po_open ON purchase_orders (id) WHERE state = 'new';
ALTER TABLE purchase_orders RENAME COLUMN state TO order_state;
CREATE TABLE events (id int, at timestamptz NOT NULL, payload jsonb, CHECK (payload ? 'type')) PARTITION BY RANGE (at);
CREATE TABLE events_2024 PARTITION OF events (CHECK (id > 0)) FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
ALTER TABLE events RENAME COLUMN payload TO body;
CREATE MATERIALIZED VIEW mv_totals (oid, amount) AS SELECT id, total FROM purchase_orders;
CREATE VIEW v_orders AS SELECT id, order_state FROM purchase_orders WHERE total > 0;
ALTER TABLE purchase_orders RENAME COLUMN total TO grand_total;
CREATE TABLE s1 (a serial, b bigserial);
ALTER SEQUENCE s1_a_seq RENAME TO s1_a_seq_renamed;
CREATE SCHEMA other;
ALTER TABLE s1 SET SCHEMA other;
CREATE TABLE "Mixed Case" ("Col A" int CHECK ("Col A" > 0), b int GENERATED ALWAYS AS ("Col A" + 1) STORED);
ALTER TABLE "Mixed Case" RENAME COLUMN "Col A" TO "Col ""B""";
-- pg_dump's order: the sequence, its owner, then the default.
CREATE TABLE dumped (id integer NOT NULL, code integer, free integer);
CREATE SEQUENCE public.dumped_id_seq AS integer START WITH 1 INCREMENT BY 1;
ALTER SEQUENCE public.dumped_id_seq OWNED BY public.dumped.id;
ALTER TABLE ONLY public.dumped ALTER COLUMN id SET DEFAULT nextval('public.dumped_id_seq'::regclass);
CREATE SEQUENCE code_seq OWNED BY dumped.code;
ALTER TABLE dumped ALTER COLUMN code SET DEFAULT nextval('code_seq');
CREATE SEQUENCE free_seq;
ALTER TABLE dumped ALTER COLUMN free SET DEFAULT nextval('free_seq');
ALTER TABLE dumped SET SCHEMA other;
CREATE TABLE disowned (id serial);
ALTER SEQUENCE disowned_id_seq OWNED BY NONE;
ALTER TABLE disowned SET SCHEMA other;
-- An enum renamed and moved: its casts in checks, generated columns,
-- partial indexes, exclusion constraints and views follow.
CREATE TYPE mood AS ENUM ('ok', 'sad');
CREATE TABLE feelings (m mood, n mood GENERATED ALWAYS AS ('ok'::mood) STORED, CHECK (m <> 'sad'::mood),
  EXCLUDE USING btree (m WITH =) WHERE (m = 'ok'::public.mood));
CREATE INDEX ON feelings (m) WHERE m = 'ok'::mood;
CREATE VIEW sad_feelings AS SELECT m FROM feelings WHERE m = 'sad'::mood;
ALTER TYPE mood RENAME TO feeling;
CREATE SCHEMA moods;
ALTER TYPE feeling SET SCHEMA moods;
