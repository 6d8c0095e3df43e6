-- Projections of mrp-planner-week, keyed by business keys (item, document type, kind of
-- request) — never by ids the ERP assigns to documents the agent creates.

-- name: planning_data
-- The planning fields of every item record at the end of the episode.
SELECT i.id AS item,
       i.lead_time_days AS lead_time_days,
       i.safety_stock AS safety_stock,
       i.moq AS moq,
       i.order_multiple AS order_multiple,
       COALESCE(i.preferred_vendor, '') AS preferred_vendor
FROM items i
ORDER BY i.id;

-- name: released_orders
-- Purchase-order lines and work orders the agent created during the episode (released from
-- MRP or entered by hand), numbered per item in need-date order.
SELECT doc_type, item, need_date, qty, vendor, from_mrp, status,
       ROW_NUMBER() OVER (PARTITION BY doc_type, item ORDER BY need_date, qty) AS n
FROM (
  SELECT 'purchase_order' AS doc_type, l.item_id AS item,
         COALESCE(l.need_by, po.need_by) AS need_date, l.qty AS qty, v.name AS vendor,
         CASE WHEN po.source = 'mrp' THEN 'yes' ELSE 'no' END AS from_mrp, po.status AS status
  FROM purchase_orders po
  JOIN po_lines l ON l.po_id = po.id
  JOIN vendors v ON v.id = po.vendor_id
  WHERE po.created_on >= :start AND po.created_by = :agent
  UNION ALL
  SELECT 'work_order', w.item_id, w.due_date, w.qty, '',
         CASE WHEN w.source = 'mrp' THEN 'yes' ELSE 'no' END, w.status
  FROM work_orders w
  WHERE w.created_on >= :start AND w.created_by = :agent
)
ORDER BY doc_type, item, n;

-- name: vendor_requests
-- Requests the agent sent to vendors about purchase-order lines during the episode, per kind
-- and item: how many, and the date asked for (the latest when there are several).
SELECT vr.kind AS kind, l.item_id AS item, v.name AS vendor,
       MAX(vr.requested_date) AS requested_date, COUNT(*) AS n
FROM vendor_requests vr
JOIN vendors v ON v.id = vr.vendor_id
JOIN po_lines l ON l.po_id = vr.po_id AND l.line_no = COALESCE(vr.po_line, 1)
WHERE vr.created_on >= :start AND vr.created_by = :agent AND vr.po_id IS NOT NULL
GROUP BY vr.kind, l.item_id, v.name
ORDER BY kind, item;
