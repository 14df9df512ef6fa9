CREATE VIEW order_totals AS
SELECT o.id AS order_id,
       o.customer_id,
       o.placed_at,
       sum(l.quantity * l.unit_price_cents) AS total_cents
FROM orders o
JOIN order_lines l ON l.order_id = o.id
GROUP BY o.id, o.customer_id, o.placed_at;

COMMENT ON VIEW order_totals IS 'Order value from its lines, in cents, before payments and refunds.';
ALTER TABLE products ADD COLUMN discontinued boolean NOT NULL DEFAULT false;
