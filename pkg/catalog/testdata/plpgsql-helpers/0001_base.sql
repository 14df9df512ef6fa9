CREATE TABLE tenants (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE
);

CREATE TABLE users (
    id bigserial PRIMARY KEY,
    email text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE categories (
    id serial PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE products (
    id bigserial PRIMARY KEY,
    category_id integer REFERENCES categories (id),
    sku text,
    price numeric(10,2) NOT NULL DEFAULT 0
);

CREATE TABLE orders (
    id bigserial PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES users (id),
    placed_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_events (
    id bigserial PRIMARY KEY,
    payload jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX categories_name_idx ON categories (name);
