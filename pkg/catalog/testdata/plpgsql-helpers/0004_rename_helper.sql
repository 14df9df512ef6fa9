-- Renames a table, keeps its old name working as a view, and renames the
-- objects named after it.
CREATE OR REPLACE FUNCTION rename_table(old_name text, new_name text,
                                        old_indexes text[] DEFAULT '{}', new_indexes text[] DEFAULT '{}',
                                        old_sequences text[] DEFAULT '{}', new_sequences text[] DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    pkey text := old_name || '_pkey';
BEGIN
    IF array_length(old_indexes, 1) IS DISTINCT FROM array_length(new_indexes, 1) THEN
        RAISE EXCEPTION 'old and new index lists differ in length';
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.tables
               WHERE table_schema = 'public' AND table_name = old_name AND table_type = 'BASE TABLE') THEN
        EXECUTE format('ALTER TABLE %I RENAME TO %I', old_name, new_name);
        EXECUTE format('CREATE VIEW %I AS SELECT * FROM %I', old_name, new_name);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
               WHERE con.conname = pkey AND rel.relname = new_name AND con.contype = 'p') THEN
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', new_name, pkey, new_name || '_pkey');
    END IF;
    FOR i IN 1..coalesce(array_length(old_indexes, 1), 0) LOOP
        EXECUTE format('ALTER INDEX IF EXISTS %I RENAME TO %I', old_indexes[i], new_indexes[i]);
    END LOOP;
    FOR i IN 1..coalesce(array_length(old_sequences, 1), 0) LOOP
        EXECUTE 'ALTER SEQUENCE IF EXISTS ' || quote_ident(old_sequences[i]) || ' RENAME TO ' || quote_ident(new_sequences[i]);
    END LOOP;
END;
$$;

SELECT rename_table('categories', 'product_categories',
                    ARRAY['categories_name_idx'], ARRAY['product_categories_name_idx'],
                    ARRAY['categories_id_seq'], ARRAY['product_categories_id_seq']);
SELECT rename_table('audit_events', 'audit_log', old_sequences => '{audit_events_id_seq}', new_sequences => '{audit_log_id_seq}');
-- A second run finds nothing left to rename.
SELECT rename_table('audit_events', 'audit_log');
