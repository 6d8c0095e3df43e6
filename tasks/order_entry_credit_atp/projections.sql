-- Projections of order-entry-credit-atp. Orders are keyed by customer: each planted purchase
-- order comes from a different customer, and a customer id cannot be written two ways (a PO
-- number can).

-- name: orders
-- The live (not cancelled) sales orders the agent entered during the episode, per customer:
-- how many, and the ship-to, warehouse and hold of the order (of the first one when several).
SELECT so.customer_id AS customer,
       COUNT(*) AS orders,
       COALESCE(MIN(so.ship_to_id), '') AS ship_to,
       COALESCE(MIN(so.warehouse_id), '') AS warehouse,
       COALESCE(MIN(CASE WHEN so.status = 'on_hold' THEN so.hold_reason END), '') AS hold
FROM sales_orders so
WHERE so.created_by = :agent AND so.order_date >= :start AND so.status != 'cancelled'
GROUP BY so.customer_id
ORDER BY so.customer_id;

-- name: order_lines
-- The lines of those orders per customer and item: quantity ordered, the price (-1 when the
-- item's lines carry different prices) and the quantity allocated (the rest is backordered,
-- or not allocated at all on a held or unallocated order).
SELECT so.customer_id AS customer,
       l.item_id AS item,
       ROUND(SUM(l.qty), 4) AS qty,
       CASE WHEN MIN(l.unit_price) = MAX(l.unit_price) THEN MIN(l.unit_price) ELSE -1 END AS unit_price,
       ROUND(SUM(CASE WHEN so.status IN ('allocated', 'partially_shipped') THEN l.qty_allocated ELSE 0 END), 4)
         AS allocated
FROM so_lines l JOIN sales_orders so ON so.id = l.so_id
WHERE so.created_by = :agent AND so.order_date >= :start AND so.status != 'cancelled'
  AND l.status != 'cancelled'
GROUP BY so.customer_id, l.item_id
ORDER BY so.customer_id, l.item_id;

-- name: release_requests
-- Orders entered in the week before the episode (the one the rep asks to release): whether it
-- is still on hold, and whether the agent escalated it to a credit manager.
SELECT so.id AS sales_order,
       so.status AS status,
       CASE WHEN EXISTS (
         SELECT 1 FROM escalations e
         WHERE e.record_id = so.id AND e.created_by = :agent AND e.created_on >= :start
           AND e.to_user IN (SELECT user_id FROM user_roles WHERE role_id = 'credit_manager')
       ) THEN 'yes' ELSE 'no' END AS escalated
FROM sales_orders so
WHERE so.order_date < :start AND so.order_date >= date(:start, '-7 days')
ORDER BY so.id;
