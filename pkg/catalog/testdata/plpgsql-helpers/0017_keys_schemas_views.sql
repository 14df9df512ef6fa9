-- key_column_usage, schemata and views, which guards ask before adding a
-- foreign key, a schema or a view; and the text functions that build
-- hashed names.
CREATE OR REPLACE FUNCTION fk_once(tbl text, col text, ref text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.table_constraints tc
                     JOIN information_schema.key_column_usage kcu
                       ON kcu.constraint_name = tc.constraint_name AND kcu.table_name = tc.table_name
                    WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_name = tbl AND kcu.column_name = col) THEN
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (%I) REFERENCES %I (id)',
                       tbl, 'fk_' || left(md5(tbl || '.' || col), 8), col, ref);
    END IF;
END;
$$;
ALTER TABLE typed_columns ADD COLUMN user_ref bigint, ADD COLUMN order_ref bigint;
SELECT fk_once('typed_columns', 'user_ref', 'users');
SELECT fk_once('typed_columns', 'user_ref', 'users');
SELECT fk_once('orders', 'user_id', 'users');
SELECT fk_once('typed_columns', 'order_ref', 'orders');

DO $$
DECLARE
    n integer;
    r record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = 'reporting') THEN
        CREATE SCHEMA reporting;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = 'reporting') THEN
        CREATE TABLE reporting.never (id int);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM information_schema.views WHERE table_schema = 'public' AND table_name = 'typed_view') THEN
        CREATE TABLE no_typed_view (id int);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM information_schema.views WHERE table_schema = 'reporting' AND table_name = 'order_totals') THEN
        CREATE VIEW reporting.order_totals AS SELECT user_id, count(*) AS n FROM orders GROUP BY user_id;
    END IF;
    SELECT count(*) INTO n FROM information_schema.key_column_usage WHERE table_schema = 'public' AND table_name = 'users';
    EXECUTE format('CREATE TABLE %I (id int)', 'users_key_columns_' || n);
    FOR r IN SELECT column_name, ordinal_position AS pos, position_in_unique_constraint AS upos
               FROM information_schema.key_column_usage
              WHERE table_schema = 'public' AND table_name = 'typed_columns' ORDER BY column_name LOOP
        EXECUTE format('CREATE TABLE %I (id int)', 'kcu_' || r.column_name || '_' || r.pos || '_' || coalesce(r.upos::text, 'none'));
    END LOOP;
    EXECUTE format('CREATE TABLE %I (id int)', 'pos_' || strpos('orders_archive', '_') || '_' || position('é' IN 'café_x')
        || '_' || strpos('abc', '') || '_' || strpos('abc', 'z'));
END;
$$;

-- table_catalog is the server's name for the database, which schemaq's
-- need not be: the catalog answers it against current_database() alone.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.tables
                WHERE table_catalog = current_database() AND table_schema = 'public' AND table_name = 'orders') THEN
        CREATE TABLE orders_in_this_database (id int);
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_catalog = current_catalog AND table_name = 'orders' AND column_name = 'no_such_column') THEN
        CREATE TABLE never_made (id int);
    END IF;
END;
$$;
