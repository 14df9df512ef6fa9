ALTER TABLE projects ALTER COLUMN tenant_id SET DEFAULT 1;
ALTER TABLE invoices ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE invoices ADD CONSTRAINT invoices_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES accounts (id);
CREATE INDEX projects_tenant_id_idx ON projects (tenant_id);
ALTER TABLE audit_log DROP CONSTRAINT audit_log_tenant_check;
COMMENT ON COLUMN audit_log.tenant_id IS 'owning account';
