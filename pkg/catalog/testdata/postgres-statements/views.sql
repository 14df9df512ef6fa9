-- View columns' names and types as PostgreSQL resolves them: functions,
-- window functions, array elements, common types of CASE, COALESCE and
-- UNION, NULL as text, JOIN … USING, LATERAL, set-returning functions.
CREATE TABLE o (id bigint PRIMARY KEY, cust int, amount numeric(10,2), placed timestamptz, note varchar(40), tags text[], meta jsonb, qty smallint, rate real, flag boolean);
CREATE TABLE c (id int PRIMARY KEY, name text, country char(2));
CREATE VIEW v1 AS SELECT
  CASE WHEN amount > 10 THEN 'big' ELSE 'small' END AS size,
  COALESCE(note, 'none') AS note2,
  amount::int AS amt_int,
  upper(note) AS up,
  substr(note, 1, 3) AS sub,
  date_trunc('day', placed) AS day,
  extract(year FROM placed) AS yr,
  row_number() OVER (ORDER BY o.id) AS rn,
  rank() OVER (PARTITION BY cust ORDER BY amount) AS rk,
  meta->>'k' AS mk,
  meta->'k' AS mj,
  tags[1] AS first_tag,
  NULLIF(qty, 0) AS nq,
  GREATEST(qty, 1) AS gq,
  concat(note, o.id) AS cc,
  format($f$%s$f$, o.id) AS ff,
  to_char(placed, 'YYYY') AS tc,
  age(placed) AS ag,
  placed::date AS pd,
  qty * 2 AS q2,
  qty + rate AS qr,
  amount / 3 AS a3,
  o.id % 7 AS m7,
  flag AND true AS fa,
  note || '!' AS bang,
  length(note) AS ln,
  now() - placed AS since,
  cust IN (1, 2) AS inl,
  array_length(tags, 1) AS al,
  round(amount) AS rnd,
  round(amount, 1) AS rnd1,
  abs(qty) AS aq,
  lower(country) AS lc,
  country AS cy,
  1 AS one, 'x' AS lit, 1.5 AS dec, true AS t, NULL AS n
FROM o JOIN c ON c.id = o.cust;
CREATE VIEW v2 AS SELECT id, name FROM c UNION SELECT id::int, note FROM o;
CREATE VIEW v3 AS SELECT cust, count(*) AS n, sum(amount) AS total, avg(qty) AS aq, max(placed) AS last, min(note) AS mn, bool_and(flag) AS ba, string_agg(note, ',') AS sa, array_agg(id) AS ids FROM o GROUP BY cust;
CREATE VIEW v4 AS WITH t AS (SELECT id, amount FROM o) SELECT t.id, t.amount * 2 AS dbl FROM t;
CREATE VIEW v5 AS SELECT DISTINCT ON (cust) cust, id FROM o ORDER BY cust, id DESC;
CREATE VIEW v6 AS SELECT o.id, x.n FROM o, LATERAL (SELECT count(*) AS n FROM c WHERE c.id = o.cust) x;
CREATE VIEW v7 AS SELECT * FROM o JOIN c USING (id);
CREATE VIEW v8 AS SELECT g AS n FROM generate_series(1, 10) g;
CREATE VIEW v9 AS SELECT id, (SELECT name FROM c WHERE c.id = o.cust) AS cname, EXISTS (SELECT 1 FROM c) AS ex FROM o;
CREATE VIEW v10 AS SELECT 1 AS a UNION ALL SELECT 2.5;
CREATE VIEW v11 AS SELECT id::text || '-' || cust AS code, amount::float8 AS f8, amount::numeric(5,1) AS n51, note::varchar(10) AS v10 FROM o;
