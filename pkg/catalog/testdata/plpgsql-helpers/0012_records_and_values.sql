-- Records read field by field, and the value functions helpers use.
DO $$
DECLARE
    r record;
    n integer;
BEGIN
    SELECT table_name, column_name, data_type INTO r
      FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = 'products' AND column_name = 'sku';
    EXECUTE format('CREATE TABLE %I (id int)', 'rec_' || r.table_name || '_' || r.column_name || '_' || r.data_type);
    SELECT count(*) INTO n FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'products';
    EXECUTE format('CREATE TABLE %I (id int)', 'cols_' || n || '_' || greatest(n, 3, 1) || '_' || least(n, 3) || '_' || coalesce(nullif(n, n), 0) || '_' || nullif(n, 0));
    EXECUTE format('CREATE TABLE %I (id int)', 'null_concat_' || coalesce('x' || NULL, 'was_null') || '_' || concat('x', NULL));
END;
$$;
CREATE OR REPLACE FUNCTION by_kind(kind text, n integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    CASE kind
        WHEN 'log', 'audit' THEN
            EXECUTE format('CREATE TABLE %I (id int)', 'case_' || kind || '_history');
        WHEN 'plain' THEN
            EXECUTE format('CREATE TABLE %I (id int)', 'case_plain');
        ELSE
            EXECUTE format('CREATE TABLE %I (id int)', 'case_else_' || kind);
    END CASE;
    BEGIN
        CASE WHEN n > 10 THEN
            EXECUTE format('CREATE TABLE %I (id int)', 'case_big_' || n);
        WHEN n > 5 THEN
            EXECUTE format('CREATE TABLE %I (id int)', 'case_mid_' || n);
        END CASE;
    EXCEPTION WHEN case_not_found THEN
        EXECUTE format('CREATE TABLE %I (id int)', 'case_none_' || n);
    END;
END;
$$;
SELECT by_kind('audit', 20);
SELECT by_kind('plain', 7);
SELECT by_kind('other', 1);
