-- Indexes: the names PostgreSQL chooses for them and for the keys made
-- beside them, ADD CONSTRAINT … USING INDEX, and how they follow
-- columns, renames, LIKE and partitions.
CREATE TABLE users (id int, email text, org int, name text, made timestamptz);
CREATE UNIQUE INDEX ON users (email);
CREATE UNIQUE INDEX ON users (email);
CREATE INDEX ON users (org, email);
CREATE INDEX ON users ((lower(email)));
CREATE INDEX ON users ((org + id), lower(name), lower(name), (name::varchar));
CREATE INDEX ON users (made DESC NULLS LAST, name NULLS FIRST);
CREATE INDEX users_partial ON users (org) WHERE org > 0;
CREATE UNIQUE INDEX users_incl ON users (id) INCLUDE (name);
CREATE INDEX IF NOT EXISTS users_partial ON users (name);
-- The zero-downtime way to add keys: build the index, then hand it over.
CREATE UNIQUE INDEX CONCURRENTLY users_id_idx ON users (id);
ALTER TABLE users ADD PRIMARY KEY USING INDEX users_id_idx;
ALTER TABLE users ADD CONSTRAINT users_email_uq UNIQUE USING INDEX users_email_idx;
-- A default key name steps around an index's.
CREATE UNIQUE INDEX users_org_key ON users (org);
ALTER TABLE users ADD UNIQUE (org);
-- A foreign key may reference columns a unique index covers.
CREATE TABLE sessions (id int, user_email text REFERENCES users (email), user_id int REFERENCES users);
-- Renames and drops.
ALTER INDEX users_partial RENAME TO users_org_partial;
ALTER INDEX users_email_uq RENAME TO users_email_key;
-- ALTER TABLE renames an index too, a key's as well.
ALTER TABLE users_incl RENAME TO users_id_incl;
ALTER TABLE users_org_key1 RENAME TO users_org_uq;
ALTER TABLE users RENAME COLUMN name TO full_name;
DROP INDEX users_org_email_idx;
DROP INDEX IF EXISTS no_such_index;
ALTER TABLE users DROP COLUMN made;
-- LIKE … INCLUDING INDEXES copies every index under new default names.
CREATE TABLE users_copy (LIKE users INCLUDING INDEXES);
-- An index moves with its table.
CREATE SCHEMA archive;
CREATE TABLE old_users (id int, email text);
CREATE UNIQUE INDEX old_users_email ON old_users (email);
ALTER TABLE old_users SET SCHEMA archive;
ALTER TABLE archive.old_users ADD CONSTRAINT old_users_email_key UNIQUE USING INDEX old_users_email;
-- Partitions get copies of their parent's indexes: those it has when
-- they are made, and those it gains.
CREATE TABLE events (id int, at date, kind text) PARTITION BY RANGE (at);
CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE INDEX ON events (kind);
CREATE UNIQUE INDEX events_id_at ON events (id, at, kind);
CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01') PARTITION BY LIST (kind);
CREATE TABLE events_2025_a PARTITION OF events_2025 FOR VALUES IN ('a');
-- pg_dump's way: the parent's index ON ONLY, the partition's own, then
-- ATTACH; and a table attached with an index of its own that matches.
CREATE INDEX events_at_idx ON ONLY events (at);
CREATE INDEX events_2024_at_idx ON events_2024 (at);
ALTER INDEX events_at_idx ATTACH PARTITION events_2024_at_idx;
CREATE INDEX events_2025_at ON ONLY events_2025 (at);
CREATE INDEX events_2025_a_at ON events_2025_a (at);
ALTER INDEX events_2025_at ATTACH PARTITION events_2025_a_at;
ALTER INDEX events_at_idx ATTACH PARTITION events_2025_at;
CREATE TABLE events_2026 (id int, at date, kind text);
CREATE INDEX events_2026_kind ON events_2026 (kind);
ALTER TABLE events ATTACH PARTITION events_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE events_2023 PARTITION OF events FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
ALTER TABLE events DETACH PARTITION events_2023;
-- A partition's own index follows a rename of its parent's column, and
-- still stands for the parent's.
ALTER TABLE events RENAME COLUMN kind TO category;
