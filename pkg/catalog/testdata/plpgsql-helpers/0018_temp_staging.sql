-- A data migration stages rows in temporary tables, which leave with the
-- session: none of them, nor the view over one, stays in the schema. A
-- temporary table shadows a permanent one of its name.
CREATE TEMP TABLE staged_users AS SELECT id, email FROM users;
ALTER TABLE staged_users ADD COLUMN checked boolean DEFAULT false;
CREATE VIEW staged_view AS SELECT id FROM staged_users;
CREATE TEMPORARY TABLE orders (id bigint, note text) ON COMMIT PRESERVE ROWS;
ALTER TABLE orders ADD COLUMN staged_only int;
ALTER TABLE public.orders ADD COLUMN staged_at timestamptz;
CREATE TABLE pg_temp.scratch (id int);
DROP TABLE pg_temp.scratch;
DO $$
BEGIN
    EXECUTE 'CREATE TEMP TABLE made_in_a_block (id int)';
    IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'orders' AND column_name = 'staged_only') THEN
        CREATE TABLE temp_altered_public (id int);
    END IF;
END;
$$;
CREATE TABLE kept_after_staging (id int);
