-- Multi-tenancy: every tenant-owned table gets a tenant_id column and a
-- check, added by a helper so that new tables can call it too.
CREATE FUNCTION add_tenant(tbl text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ADD COLUMN tenant_id bigint', tbl);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (tenant_id > 0)', tbl, tbl || '_tenant_check');
END;
$$;

SELECT add_tenant('projects');
SELECT add_tenant('invoices');
SELECT add_tenant('audit_log');
