-- Projections of cycle-count-adjustments. Only the generator puts stock at a location of WH-MAIN
-- (Northgate's history keeps it unlocated), so the located stock is exactly the counted zones.

-- name: onhand
-- On-hand of every item at every location of the main plant warehouse.
SELECT item_id AS item, location_id AS location, ROUND(SUM(qty), 4) AS qty
FROM inventory_txns
WHERE warehouse_id = 'WH-MAIN' AND location_id IS NOT NULL
GROUP BY item_id, location_id;

-- name: adjustments
-- The agent's adjustments of the episode per item, location, reason and status (posted, or
-- pending the controller's approval), with how many documents make each up (a split shows).
SELECT item_id AS item, COALESCE(location_id, '') AS location, reason, status,
       ROUND(SUM(qty), 4) AS qty, COUNT(*) AS entries
FROM adjustments
WHERE created_by = :agent AND created_on >= :start
GROUP BY item_id, location_id, reason, status;

-- name: transfers
-- The agent's transfers of the episode per item and route.
SELECT item_id AS item, COALESCE(from_location, '') AS from_location, COALESCE(to_location, '') AS to_location,
       ROUND(SUM(qty), 4) AS qty
FROM transfers
WHERE created_by = :agent AND created_on >= :start
GROUP BY item_id, from_location, to_location;
