CREATE TABLE categories (
    id        int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name      text NOT NULL UNIQUE,
    parent_id int REFERENCES categories (id)
);

CREATE TABLE products (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sku          text NOT NULL UNIQUE,
    title        text NOT NULL,
    category_id  int REFERENCES categories (id),
    price_cents  integer NOT NULL CHECK (price_cents >= 0)
);

CREATE INDEX products_category_idx ON products (category_id);
COMMENT ON COLUMN products.price_cents IS 'List price in cents, before discounts and tax.';
