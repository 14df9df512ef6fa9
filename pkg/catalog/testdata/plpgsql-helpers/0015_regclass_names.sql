-- Names printed by ::regclass, ::regtype and ::regnamespace, which
-- helpers build other names from: the name alone when the search path
-- finds it, else qualified, quoted as quote_ident() quotes.
CREATE SCHEMA archive;
CREATE TABLE archive.orders_2019 (id bigint PRIMARY KEY);
CREATE TABLE archive.users (id bigint PRIMARY KEY);
CREATE TABLE "MixedCase" (id int);
CREATE TABLE "int" (id int);

DO $$
DECLARE
    r record;
BEGIN
    EXECUTE format('CREATE TABLE %I (id int)', 'rc_' || 'orders'::regclass::text);
    EXECUTE format('CREATE TABLE %I (id int)', 'rc_' || 'archive.orders_2019'::regclass);
    EXECUTE format('CREATE TABLE %I (id int)', 'rc_' || 'archive.users'::regclass || '_' || 'users'::regclass);
    EXECUTE format('CREATE TABLE %I (id int)', 'rc_' || '"MixedCase"'::regclass || '_' || '"int"'::regclass);
    EXECUTE format('CREATE TABLE %I (id int)', 'rco_' || 'orders'::regclass::oid::regclass);
    EXECUTE format('CREATE TABLE %I (id int)', 'rt_' || 'order_status'::regtype || '_' || 'orders'::regtype);
    EXECUTE format('CREATE TABLE %I (id int)', 'rn_' || 'archive'::regnamespace || '_' || 'PUBLIC'::regnamespace);
    EXECUTE format('CREATE TABLE %I (id int)', format('rf_%s', 'archive.users'::regclass));
    SELECT c.oid::regclass AS rel INTO r FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'archive' AND c.relname = 'orders_2019' AND c.relkind = 'r';
    EXECUTE format('CREATE TABLE %I (id int)', 'rrec_' || r.rel);
    SET LOCAL search_path = archive, public;
    EXECUTE format('CREATE TABLE %I (id int)', 'rpath_' || 'users'::regclass || '_' || 'public.users'::regclass);
END;
$$;
