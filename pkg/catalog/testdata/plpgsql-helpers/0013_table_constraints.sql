-- Guards over information_schema.table_constraints, the other usual way
-- to make ADD CONSTRAINT idempotent. PostgreSQL 15 lists each NOT NULL
-- column there as a CHECK named <oid>_<oid>_<n>_not_null, and the system
-- catalogs' keys as pg_…; the catalog holds neither name, but their
-- shapes, so a guard on another name is answered.
CREATE OR REPLACE FUNCTION add_fk_once(tbl text, con text, col text, ref text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.table_constraints
                    WHERE constraint_name = con AND constraint_type = 'FOREIGN KEY') THEN
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (%I) REFERENCES %I (id)', tbl, con, col, ref);
    END IF;
END;
$$;
ALTER TABLE orders ADD COLUMN tenant_ref integer;
SELECT add_fk_once('orders', 'orders_tenant_ref_fkey', 'tenant_ref', 'tenants');
SELECT add_fk_once('orders', 'orders_tenant_ref_fkey', 'tenant_ref', 'tenants');

DO $$
DECLARE
    n integer;
    t text;
    c text := 'set';
    r record;
BEGIN
    IF NOT EXISTS (SELECT FROM information_schema.table_constraints WHERE constraint_name = 'categories_name_key') THEN
        ALTER TABLE product_categories ADD CONSTRAINT categories_name_key UNIQUE (name);
    END IF;
    IF NOT EXISTS (SELECT FROM information_schema.table_constraints WHERE constraint_name = 'categories_name_key') THEN
        ALTER TABLE product_categories ADD CONSTRAINT categories_name_again UNIQUE (name);
    END IF;
    -- The NOT NULL columns are CHECK rows, the primary key's included;
    -- DROP NOT NULL takes one away.
    ALTER TABLE products ALTER COLUMN price DROP NOT NULL;
    ALTER TABLE products ALTER COLUMN sku SET NOT NULL;
    FOREACH t IN ARRAY ARRAY['users', 'products', 'product_categories', 'orders'] LOOP
        SELECT count(*) INTO n FROM information_schema.table_constraints
         WHERE table_schema = 'public' AND table_name = t AND constraint_type = 'CHECK';
        EXECUTE format('CREATE TABLE %I (id int)', t || '_checks_' || n);
    END LOOP;
    SELECT count(DISTINCT constraint_type) INTO n FROM information_schema.table_constraints
     WHERE table_schema = 'public' AND table_name = 'orders';
    EXECUTE format('CREATE TABLE %I (id int)', 'orders_kinds_' || n);
    -- No row sets the targets to NULL.
    SELECT constraint_name INTO c FROM information_schema.table_constraints WHERE table_name = 'no_such_table';
    SELECT * INTO r FROM information_schema.table_constraints WHERE table_name = 'no_such_table';
    EXECUTE format('CREATE TABLE %I (id int)', 'no_row_' || coalesce(c || 'x', 'null') || '_' || coalesce(r.constraint_type, 'null'));
END;
$$;

-- A pattern no NOT NULL column's constraint name (digits first) and no
-- system constraint (pg_…) could match is answered.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.table_constraints WHERE constraint_name LIKE 'fk\_orders%') THEN
        CREATE TABLE no_fk_orders_yet (id int);
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.table_constraints WHERE constraint_name ILIKE 'ORDERS\_%') THEN
        CREATE TABLE some_orders_constraint (id int);
    END IF;
END;
$$;
