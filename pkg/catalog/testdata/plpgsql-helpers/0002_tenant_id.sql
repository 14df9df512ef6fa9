-- Adds tenant_id without rewriting every row: each table is altered in its
-- own transaction, so that no single lock is held across all of them.
-- The default reads the session's tenant, which this migration runs as.
SET app.current_tenant = '1';

CREATE OR REPLACE FUNCTION migrate_add_tenant_id(table_name text)
RETURNS void AS $$
BEGIN
    -- ALTER TABLE … REFERENCES takes a lock even when the column exists,
    -- so look first.
    IF NOT EXISTS (SELECT true FROM pg_attribute
                   WHERE attrelid = quote_ident(table_name)::regclass
                     AND attname = 'tenant_id' AND NOT attisdropped) THEN
        EXECUTE format('ALTER TABLE %I ADD COLUMN IF NOT EXISTS tenant_id integer REFERENCES tenants(id) ON UPDATE CASCADE ON DELETE CASCADE DEFAULT (current_setting(''app.current_tenant''::text))::integer', table_name);
    END IF;
    RAISE NOTICE 'tenant_id added to %', table_name;
END;
$$ LANGUAGE plpgsql;

SELECT migrate_add_tenant_id('users');
COMMIT AND CHAIN;
SELECT migrate_add_tenant_id('categories');
COMMIT AND CHAIN;
SELECT migrate_add_tenant_id('products');
COMMIT AND CHAIN;
SELECT migrate_add_tenant_id('orders');
COMMIT AND CHAIN;
-- Called twice on purpose: the helper is idempotent.
SELECT migrate_add_tenant_id('orders');

DROP FUNCTION migrate_add_tenant_id(text);
