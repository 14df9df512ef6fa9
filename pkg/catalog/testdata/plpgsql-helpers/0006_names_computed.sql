-- Table names computed by the string and integer functions at their edges:
-- an empty or NULL delimiter, positions counted from the end, signs, an
-- OFFSET of NULL. Each table's name is what PostgreSQL computed, so the
-- catalog must compute the same to match.
DO $$
DECLARE
    n integer := 2;
    parts text[];
BEGIN
    EXECUTE format('CREATE TABLE %I (id int)', 'sp_' || split_part('alpha.beta.gamma', '.', -1));
    EXECUTE format('CREATE TABLE %I (id int)', 'sp_' || split_part('alpha.beta.gamma', '.', -3));
    EXECUTE format('CREATE TABLE %I (id int)', 'sp_empty_' || split_part('whole', '', 1) || '_' || split_part('whole', '', 2) || '_' || split_part('whole', '', -1));
    EXECUTE format('CREATE TABLE %I (id int)', 'sp_far_' || split_part('a.b', '.', -5) || 'x');
    parts := string_to_array('one', '');
    EXECUTE format('CREATE TABLE %I (id int)', 'sa_' || array_length(parts, 1) || '_' || parts[1]);
    parts := string_to_array('xyz', NULL);
    EXECUTE format('CREATE TABLE %I (id int)', 'sa_null_' || array_length(parts, 1) || '_' || parts[3]);
    EXECUTE format('CREATE TABLE %I (id int)', 'signs_' || (-(-n) + +1) || '_' || (-n * -3));
    IF EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name OFFSET NULL LIMIT NULL) THEN
        CREATE TABLE offset_null (id int);
    END IF;
END;
$$;
