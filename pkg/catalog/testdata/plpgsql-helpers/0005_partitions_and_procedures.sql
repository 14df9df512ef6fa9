CREATE TABLE events (
    id bigint GENERATED ALWAYS AS IDENTITY,
    tenant_id integer NOT NULL REFERENCES tenants (id),
    happened_at date NOT NULL,
    kind text NOT NULL
) PARTITION BY RANGE (happened_at);

CREATE PROCEDURE create_quarters(y integer, VARIADIC kinds text[])
LANGUAGE plpgsql AS $$
DECLARE
    q integer;
    k text;
BEGIN
    FOR q IN 1..4 LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
                       'events_' || y || '_q' || q,
                       y || '-' || ((q - 1) * 3 + 1) || '-01',
                       CASE WHEN q = 4 THEN (y + 1) || '-1-01' ELSE y || '-' || (q * 3 + 1) || '-01' END);
    END LOOP;
    FOREACH k IN ARRAY kinds LOOP
        CONTINUE WHEN k = 'skip';
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I (id bigint PRIMARY KEY, note text)', 'event_' || k || '_details');
    END LOOP;
END;
$$;

CALL create_quarters(2025, 'click', 'skip', 'view');

-- Idempotent column adds, the exception-handler way.
DO $$
BEGIN
    BEGIN
        ALTER TABLE products ADD COLUMN sku text;
    EXCEPTION WHEN duplicate_column THEN
        RAISE NOTICE 'products.sku already there';
    END;
    BEGIN
        ALTER TABLE products ADD COLUMN discontinued boolean NOT NULL DEFAULT false;
    EXCEPTION WHEN duplicate_column THEN
        NULL;
    END;
END;
$$;

-- A helper that guards on pg_tables and counts columns before it acts.
CREATE FUNCTION add_timestamps(tbl text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    SELECT count(*) INTO n FROM information_schema.columns
    WHERE table_schema = 'public' AND table_name = tbl AND column_name IN ('created_at', 'updated_at');
    IF n = 0 THEN
        EXECUTE format('ALTER TABLE %I ADD COLUMN created_at timestamptz NOT NULL DEFAULT now()', tbl);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_tables WHERE schemaname = 'public' AND tablename = tbl) THEN
        RETURN -1;
    END IF;
    EXECUTE format('ALTER TABLE %I ADD COLUMN IF NOT EXISTS updated_at timestamptz', tbl);
    RETURN n;
END;
$$;

SELECT add_timestamps(t) FROM unnest(ARRAY['users', 'orders', 'products']) AS t;
