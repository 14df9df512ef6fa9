CREATE TABLE accounts (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
    id serial PRIMARY KEY,
    title varchar(200) NOT NULL,
    archived boolean NOT NULL DEFAULT 'f'
);

CREATE TABLE invoices (
    id bigserial PRIMARY KEY,
    project_id integer NOT NULL REFERENCES projects (id),
    amount numeric(12,2) NOT NULL DEFAULT 0,
    note text DEFAULT NULL
);

CREATE TABLE audit_log (
    id bigserial PRIMARY KEY,
    payload jsonb NOT NULL DEFAULT '{}'
);
