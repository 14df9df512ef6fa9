-- The usual guards of an idempotent CREATE TYPE and ADD VALUE, over
-- pg_type and pg_enum. The catalog holds the enums and the tables' and
-- views' row types; domains, range types and an extension's types by
-- name only; pg_catalog's types by their shapes.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'order_status') THEN
        CREATE TYPE order_status AS ENUM ('new', 'paid');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'order_status') THEN
        CREATE TYPE order_status AS ENUM ('other');
    END IF;
END;
$$;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE DOMAIN email_address AS citext CHECK (VALUE LIKE '%@%');
CREATE TYPE price_range AS RANGE (subtype = numeric);

CREATE OR REPLACE FUNCTION ensure_label(typ text, label text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid
                    WHERE t.typname = typ AND e.enumlabel = label) THEN
        EXECUTE format('ALTER TYPE %I ADD VALUE %L', typ, label);
    END IF;
END;
$$;
SELECT ensure_label('order_status', 'shipped');
SELECT ensure_label('order_status', 'shipped');

DO $$
DECLARE
    n integer;
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['order_status', 'orders', 'product_categories', 'status_of_order', 'int8', 'yes_or_no'] LOOP
        IF EXISTS (SELECT 1 FROM pg_type WHERE typname = t) THEN
            EXECUTE format('CREATE TABLE %I (id int)', 'type_' || t || '_exists');
        END IF;
    END LOOP;
    SELECT count(*) INTO n FROM pg_enum WHERE enumtypid = 'order_status'::regtype;
    EXECUTE format('CREATE TABLE %I (id int)', 'order_status_labels_' || n);
    SELECT count(*) INTO n FROM pg_type t JOIN pg_namespace s ON s.oid = t.typnamespace
     WHERE s.nspname = 'public' AND t.typname IN ('orders', 'order_status', 'users');
    EXECUTE format('CREATE TABLE %I (id int)', 'public_types_' || n);
    IF EXISTS (SELECT 1 FROM pg_type WHERE typrelid = 'orders'::regclass AND typtype = 'c') THEN
        CREATE TABLE orders_row_type (id int);
    END IF;
END;
$$;
ALTER TABLE orders ADD COLUMN status order_status NOT NULL DEFAULT 'new';
