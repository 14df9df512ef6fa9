-- Names made by format() and the quoting functions, as helpers make them
-- from their arguments: keywords, mixed case, digits first, quotes and
-- spaces inside, and NULL arguments. PostgreSQL's own quoting decides
-- each table's name.
DO $$
DECLARE
    w text;
BEGIN
    FOREACH w IN ARRAY ARRAY['select', 'user', 'order', 'name', 'value', 'Mixed', '1st', 'has space', 'quo"te', 'ok_1', 'é_accent', 'between', 'filter', 'left', 'over'] LOOP
        EXECUTE 'CREATE TABLE ' || quote_ident('q_' || w) || ' (id int)';
        EXECUTE format('CREATE TABLE %I (id int)', 'f_' || w);
        EXECUTE format('CREATE TABLE %s (id int)', quote_ident(w));
    END LOOP;
    EXECUTE format('CREATE TABLE %I (id int)', 'n_' || format('%s|%L|%s', NULL, NULL, 'x'));
    EXECUTE format('CREATE TABLE %I (id int)', concat_ws('_', 'cw', NULL, 'b', '', 'c'));
    EXECUTE format('CREATE TABLE %I (id int)', concat('c', NULL, 1, true));
    EXECUTE format('CREATE TABLE %I (id int)', 'len_' || length('héllo') || '_' || coalesce(array_length(ARRAY[]::text[], 1), -1) || '_' || cardinality(ARRAY[]::text[]));
    EXECUTE format('CREATE TABLE %I (id int)', 'div_' || (-7 / 2) || '_' || (-7 % 2) || '_' || (7 % -2));
    EXECUTE format('CREATE TABLE %I (id int)', 'cast_' || ' 42 '::integer || '_' || '+5'::int || '_' || true::text);
    EXECUTE format('CREATE TABLE %I (id int)', 'up_' || upper('straße_ok') || '_' || lower('MiXeD'));
    EXECUTE format('CREATE TABLE %I (id int)', 'rep_' || replace('a-b-c', '-', '') || '_' || replace('abc', '', 'x'));
    EXECUTE format('CREATE TABLE %2$I_%1$s (id int)', 'tail', 'head');
    EXECUTE format('CREATE TABLE %I (id int)', 'qi_' || quote_ident('between') || quote_ident('int') || quote_ident('name') || quote_ident('values') || quote_ident('timestamp') || quote_ident('left') || quote_ident('over') || quote_ident('filter') || quote_ident('do'));
    EXECUTE format('CREATE TABLE %I (id int)', format('w_%5s|%-5s|%*s|%-*s|%*s|%9$*5$s|%2$-4s|%s|', 'ab', 'cé', 4, 'e', -3, 'f', NULL, 'g', 'h'));
    EXECUTE format('CREATE TABLE %I (id int)', format('wl_%6L|%-8I|', 'x', 'Y'));
END;
$$;
DO $$
BEGIN
    EXECUTE format('CREATE TABLE %I (id int)', 'bool_' || true || '_' || format('%s', false) || '_' || true::text || '_' || ARRAY[true, false]::text || '_' || (1 < 2)::text);
END;
$$;
DO $$
BEGIN
    EXECUTE format('CREATE TABLE %I (id int)', replace('bq_' || format('%L_%I', true, false) || '_' || quote_literal(true) || '_' || quote_nullable(false) || '_' || concat(true) || '_' || concat_ws(',', true, false), '''', ''));
END;
$$;
