-- Migrations written before CREATE INDEX IF NOT EXISTS guard each index
-- on pg_indexes or pg_class, and hand an index to a key once. Run twice,
-- every guard says no the second time.
CREATE TABLE guarded (id int, email text, org int);
CREATE FUNCTION guard_indexes() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = 'guarded_email_idx')
       AND NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'guarded_email_key') THEN
        CREATE UNIQUE INDEX guarded_email_idx ON guarded (email);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE c.relname = 'guarded_org_idx' AND c.relkind = 'i' AND n.nspname = 'public') THEN
        CREATE INDEX guarded_org_idx ON guarded (org);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_indexes WHERE tablename = 'guarded' AND indexname = 'guarded_email_idx') THEN
        ALTER TABLE guarded ADD CONSTRAINT guarded_email_key UNIQUE USING INDEX guarded_email_idx;
    END IF;
    IF (SELECT count(*) FROM pg_indexes WHERE tablename = 'guarded') = 2 THEN
        CREATE TABLE IF NOT EXISTS guarded_two_indexes (id int);
    END IF;
END;
$$;
SELECT guard_indexes();
SELECT guard_indexes();
