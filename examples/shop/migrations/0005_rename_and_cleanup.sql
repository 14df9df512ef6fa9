-- "addresses" become "shipping_addresses"; the old free-text city is kept.
ALTER TABLE addresses RENAME TO shipping_addresses;
ALTER TABLE shipping_addresses ADD COLUMN postal_code text;
ALTER TABLE customers RENAME COLUMN full_name TO name;
ALTER TABLE orders ADD COLUMN shipping_address_id bigint REFERENCES shipping_addresses (id);

CREATE TABLE wishlists (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers (id));
DROP TABLE wishlists;
