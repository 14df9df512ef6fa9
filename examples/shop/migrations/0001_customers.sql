-- Customers and their addresses.
CREATE TABLE customers (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email       text NOT NULL UNIQUE,
    full_name   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE addresses (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id  bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    line1        text NOT NULL,
    city         text NOT NULL,
    country_code char(2) NOT NULL
);

COMMENT ON TABLE customers IS 'People and companies who can place orders.';
COMMENT ON COLUMN addresses.country_code IS 'ISO 3166-1 alpha-2 country code.';
