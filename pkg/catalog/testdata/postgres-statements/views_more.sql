-- More views: recursive, with options, materialized WITH NO DATA,
-- aggregates with FILTER and ORDER BY, casts, windows, subqueries,
-- VALUES and JSON builders.
CREATE TABLE t (id int PRIMARY KEY, parent int, name text, amt numeric(8,2));
CREATE RECURSIVE VIEW tree (id, depth) AS SELECT id, 0 FROM t WHERE parent IS NULL UNION ALL SELECT t.id, tree.depth + 1 FROM t JOIN tree ON t.parent = tree.id;
CREATE VIEW sb WITH (security_barrier) AS SELECT id, name FROM t;
CREATE MATERIALIZED VIEW mv (i, n) AS SELECT id, name FROM t WITH NO DATA;
CREATE VIEW agg AS SELECT parent, sum(amt) AS total, count(DISTINCT name) AS names, array_agg(name ORDER BY name) AS all_names, max(amt) FILTER (WHERE amt > 0) AS mx FROM t GROUP BY parent;
CREATE VIEW casts AS SELECT id::bigint AS b, amt::text AS s, name::varchar AS v, '2024-01-01'::date AS d, interval '1 day' AS i, 'a'::char AS c1, array[1,2] AS arr, (amt * 100)::int AS cents, amt::numeric(10,1) AS n FROM t;
CREATE VIEW w AS SELECT id, lag(amt) OVER w AS prev, sum(amt) OVER w AS running, first_value(name) OVER w AS fv, ntile(4) OVER w AS q, dense_rank() OVER w AS dr FROM t WINDOW w AS (ORDER BY id);
CREATE VIEW sub AS SELECT x.id, x.name FROM (SELECT id, name FROM t) x WHERE x.id IN (SELECT parent FROM t);
CREATE VIEW vals AS SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(n, s);
CREATE VIEW js AS SELECT json_build_object('id', id) AS o, jsonb_agg(name) AS a, to_jsonb(t) AS row FROM t GROUP BY id, t.*;
