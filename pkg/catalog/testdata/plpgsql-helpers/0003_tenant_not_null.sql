-- Every tenant_id becomes mandatory, and every tenant-owned table gets
-- row-level security.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT table_name FROM information_schema.columns
        WHERE table_schema = 'public' AND column_name = 'tenant_id'
        ORDER BY table_name
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant_id SET NOT NULL', r.table_name);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', r.table_name);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = (current_setting(%L))::integer)',
                       r.table_name, 'app.current_tenant');
    END LOOP;
END;
$$;
