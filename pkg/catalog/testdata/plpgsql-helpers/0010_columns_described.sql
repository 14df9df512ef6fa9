-- Helpers that read how columns are described: their types, nullability
-- and defaults, in the order of their positions. Each answer names a
-- table. (The positions themselves are not in the names: after a column
-- is dropped PostgreSQL's keep the gap, as attnum does, and the catalog's
-- do not; docs/catalog.md.)
CREATE TABLE described (
    id bigserial PRIMARY KEY,
    gone integer,
    label varchar(40) NOT NULL DEFAULT 'none',
    tags text[],
    at timestamptz DEFAULT now(),
    amount numeric(10, 2) DEFAULT 0,
    flag boolean NOT NULL DEFAULT false
);
ALTER TABLE described DROP COLUMN gone;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT column_name, ordinal_position, data_type, is_nullable, column_default
               FROM information_schema.columns
              WHERE table_schema = 'public' AND table_name = 'described'
              ORDER BY ordinal_position LOOP
        EXECUTE format('CREATE TABLE %I (id int)',
            left(concat_ws('|', 'd', r.column_name, r.data_type, r.is_nullable, coalesce(r.column_default, '-')), 63));
    END LOOP;
    FOR r IN SELECT attname, attnum, attnotnull, atthasdef FROM pg_attribute
              WHERE attrelid = 'described'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum LOOP
        EXECUTE format('CREATE TABLE %I (id int)', concat_ws('|', 'a', r.attname, r.attnotnull, r.atthasdef));
    END LOOP;
END;
$$;
