-- Loops and arrays at their edges, each turn naming a table: reversed
-- ranges with steps, empty ranges, subscripts past either end, slices,
-- CASE and coalesce.
DO $$
DECLARE
    i integer;
    a text[] := ARRAY['x', 'y', 'z'];
    t text;
    repeat_me text := 'abcdefghijklmnopqrstuvwxyz_abcdefghijklmnopqrstuvwxyz_abcdefghij';
BEGIN
    FOR i IN REVERSE 10..1 BY 4 LOOP
        EXECUTE format('CREATE TABLE %I (id int)', 'rev_' || i);
    END LOOP;
    FOR i IN 5..1 LOOP
        EXECUTE format('CREATE TABLE %I (id int)', 'never_' || i);
    END LOOP;
    FOR i IN -1..1 LOOP
        EXECUTE format('CREATE TABLE %I (id int)', 'neg_' || i || '_' || coalesce(a[i], 'none'));
    END LOOP;
    EXECUTE format('CREATE TABLE %I (id int)', 'sub_' || coalesce(a[4], 'past') || '_' || a[3] || '_' || array_upper(a, 1) || '_' || array_lower(a, 1));
    FOREACH t IN ARRAY ARRAY['p', NULL, 'q'] LOOP
        EXECUTE format('CREATE TABLE %I (id int)', 'each_' || coalesce(t, 'null'));
    END LOOP;
    EXECUTE format('CREATE TABLE %I (id int)', CASE WHEN array_length(a, 1) > 2 THEN 'case_long' ELSE 'case_short' END);
    EXECUTE format('CREATE TABLE %I (id int)', 'case2_' || CASE array_length(a, 1) WHEN 3 THEN 'three' ELSE 'other' END);
    EXECUTE format('CREATE TABLE %I (id int)', 'cat_' || array_to_string(a || ARRAY['w'], '-'));
    EXECUTE format('CREATE TABLE %I (id int)', 'long_' || repeat_me || '_tail');
    EXECUTE format('CREATE TABLE %I (id int)', left('left_cut_here', 8) || right('xx_right', 6) || substr('__substr__', 3, 6) || trim('  trim  ') || btrim('xxbtrimxx', 'x') || lpad('7', 3, '0') || rpad('r', 3, '_'));
    i := 0;
    WHILE i < 3 LOOP
        i := i + 1;
        CONTINUE WHEN i = 2;
        EXECUTE format('CREATE TABLE %I (id int)', 'while_' || i);
    END LOOP;
END;
$$;
DO $$
BEGIN
    EXECUTE format('CREATE TABLE %I (id int)', 'cut_' || left('abcdef', -2) || '_' || right('abcdef', -4) || '_' || left('ab', 9) || '_' || right('ab', 0) || 'x');
    EXECUTE format('CREATE TABLE %I (id int)', 'sub_' || substr('abcdef', 0, 3) || '_' || substr('abcdef', -2, 5) || '_' || substr('abcdef', 4) || '_' || substr('abc', 9, 2) || 'x' || substring('héllo' from 2 for 3));
    EXECUTE format('CREATE TABLE %I (id int)', 'pad_' || lpad('hello', 3) || '_' || rpad('é', 4, 'ab') || '_' || lpad('x', 4, '') || '_' || lpad('x', -1, 'y') || 'z' || lpad('5', 3, '0'));
    EXECUTE format('CREATE TABLE %I (id int)', 'trims_' || ltrim('xxaxx', 'x') || '_' || rtrim('xxaxx', 'x') || '_' || btrim('abcba', 'ab') || '_' || trim(both 'z' from 'zzqzz'));
END;
$$;
