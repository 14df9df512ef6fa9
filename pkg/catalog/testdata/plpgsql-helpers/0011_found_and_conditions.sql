-- FOUND and exception conditions, as helpers test them after PERFORM,
-- SELECT INTO and EXECUTE.
DO $$
DECLARE
    t text;
BEGIN
    PERFORM 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'products';
    IF FOUND THEN
        EXECUTE 'CREATE TABLE found_after_perform (id int)';
    END IF;
    PERFORM 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'no_such_table';
    IF NOT FOUND THEN
        EXECUTE 'CREATE TABLE not_found_after_perform (id int)';
    END IF;
    SELECT table_name INTO t FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'nothing_here';
    IF NOT FOUND THEN
        EXECUTE 'CREATE TABLE not_found_after_select_into (id int)';
    END IF;
    BEGIN
        EXECUTE 'CREATE TABLE products (id int)';
    EXCEPTION WHEN duplicate_table THEN
        EXECUTE 'CREATE TABLE caught_duplicate_table (id int)';
    END;
    BEGIN
        EXECUTE 'ALTER TABLE products ADD COLUMN sku text';
    EXCEPTION WHEN duplicate_column THEN
        EXECUTE 'CREATE TABLE caught_duplicate_column (id int)';
    END;
    BEGIN
        EXECUTE 'ALTER TABLE no_such_table ADD COLUMN x int';
    EXCEPTION WHEN undefined_table THEN
        EXECUTE 'CREATE TABLE caught_undefined_table (id int)';
    END;
    BEGIN
        RAISE EXCEPTION 'custom' USING ERRCODE = 'P0001';
    EXCEPTION WHEN raise_exception THEN
        EXECUTE 'CREATE TABLE caught_raise (id int)';
    END;
END;
$$;
DO $$
DECLARE
    i integer;
    t text;
BEGIN
    FOR i IN 1..0 LOOP
    END LOOP;
    IF NOT FOUND THEN
        EXECUTE 'CREATE TABLE found_false_after_empty_for (id int)';
    END IF;
    FOR i IN 1..2 LOOP
    END LOOP;
    IF FOUND THEN
        EXECUTE 'CREATE TABLE found_true_after_for (id int)';
    END IF;
    FOREACH t IN ARRAY ARRAY[]::text[] LOOP
    END LOOP;
    IF NOT FOUND THEN
        EXECUTE 'CREATE TABLE found_false_after_empty_foreach (id int)';
    END IF;
    FOREACH t IN ARRAY ARRAY['x'] LOOP
    END LOOP;
    IF FOUND THEN
        EXECUTE 'CREATE TABLE found_true_after_foreach (id int)';
    END IF;
END;
$$;
