-- Multi-tenancy: every tenant-owned table gets a tenant_id column and a
-- check, added by ops.add_tenant(), a helper the platform team installs in
-- every database outside this history (see postgres_test.go for its body).
SELECT ops.add_tenant('projects');
SELECT ops.add_tenant('invoices');
SELECT ops.add_tenant('audit_log');
