-- Idempotent helpers of the kind migration tools generate: each change is
-- guarded by a question to the system catalogs, asked twice so that the
-- second call finds the first's work. The answers come from the catalog.
CREATE OR REPLACE FUNCTION add_column_once(tbl text, col text, typ text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                   WHERE table_schema = 'public' AND table_name = tbl AND column_name = col) THEN
        EXECUTE format('ALTER TABLE %I ADD COLUMN %I %s', tbl, col, typ);
    END IF;
END;
$$;
SELECT add_column_once('products', 'weight_g', 'integer');
SELECT add_column_once('products', 'weight_g', 'integer');
SELECT add_column_once('users', 'slug', 'text');

CREATE OR REPLACE FUNCTION unique_once(tbl text, col text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = tbl::regclass AND contype = 'u' AND conname = tbl || '_' || col || '_key') THEN
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (%I)', tbl, tbl || '_' || col || '_key', col);
    END IF;
END;
$$;
SELECT unique_once('users', 'slug');
SELECT unique_once('users', 'slug');

DO $$
DECLARE
    n integer;
    r record;
BEGIN
    SELECT count(*) INTO n FROM information_schema.tables
     WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name LIKE 'p%';
    EXECUTE format('CREATE TABLE %I (id int)', 'counted_p_' || n);
    FOR r IN SELECT table_name FROM information_schema.columns
              WHERE table_schema = 'public' AND column_name = 'weight_g' ORDER BY table_name LOOP
        EXECUTE format('CREATE VIEW %I AS SELECT id, weight_g FROM %I', r.table_name || '_weights', r.table_name);
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'products_weights') THEN
        EXECUTE 'CREATE TABLE saw_the_view (id int)';
    END IF;
    IF (SELECT count(*) FROM information_schema.table_constraints
        WHERE table_name = 'users' AND constraint_type = 'UNIQUE') = 2 THEN
        EXECUTE 'CREATE TABLE two_uniques_on_users (id int)';
    END IF;
END;
$$;

-- A guard on a constraint's name alone. pg_constraint lists constraint
-- triggers and domain checks as well as the tables' constraints; the
-- catalog keeps their names, so this guard is answered.
CREATE FUNCTION noop_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER products_audit AFTER INSERT ON products FOR EACH ROW EXECUTE FUNCTION noop_trigger();
CREATE DOMAIN positive_int AS integer CHECK (VALUE > 0);
CREATE OR REPLACE FUNCTION unique_by_name(tbl text, con text, col text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = con) THEN
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (%I)', tbl, con, col);
    END IF;
END;
$$;
SELECT unique_by_name('products', 'products_sku_key', 'sku');
SELECT unique_by_name('products', 'products_sku_key', 'sku');
