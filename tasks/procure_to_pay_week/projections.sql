-- Projections of procure-to-pay-week, keyed by business keys (vendor name, item, invoice number
-- as billed with `-`, ` ` and `/` removed) — never by the ids the ERP gives the agent's documents.

-- name: po_lines
-- Every line of the purchase orders created during the episode (cancelled ones aside): what was
-- ordered from whom, at what price and date, whether the order was sent, and whether it was
-- flagged at risk (an escalation with reason lead_time on the order).
SELECT v.name AS vendor,
       l.item_id AS item,
       printf('%.4f', l.qty) AS qty,
       printf('%.4f', l.unit_price) AS unit_price,
       COALESCE(l.need_by, po.need_by, '') AS need_by,
       CASE WHEN po.sent_on IS NOT NULL THEN 'yes' ELSE 'no' END AS sent,
       CASE WHEN EXISTS (SELECT 1 FROM escalations e
                         WHERE e.reason = 'lead_time' AND e.record_id = po.id AND e.created_on >= :start)
            THEN 'yes' ELSE 'no' END AS at_risk
FROM po_lines l
JOIN purchase_orders po ON po.id = l.po_id
JOIN vendors v ON v.id = po.vendor_id
WHERE po.created_on >= :start AND po.status <> 'cancelled' AND l.status <> 'cancelled'
ORDER BY v.name, l.item_id;

-- name: po_vendors
-- The vendors ordered from during the episode.
SELECT DISTINCT v.name AS vendor
FROM purchase_orders po
JOIN vendors v ON v.id = po.vendor_id
WHERE po.created_on >= :start AND po.status <> 'cancelled'
ORDER BY v.name;

-- name: receipt_lines
-- What was received and refused during the episode, per vendor, ordered item and the item that
-- went into stock (several receipt lines for one of them are added up). A received quantity is
-- keyed by the item received (a substitute's own id, RCV-1.4); a refused quantity by the ordered
-- item alone, with `item` empty: the handbook asks for the refused quantity and its reason
-- (RCV-1.1), not for the id of what was sent back, so whether the agent also recorded the
-- arriving item on a refused line (or split a line into its received and refused parts) does not
-- move the key.
WITH parts AS (
    SELECT r.vendor_id AS vendor_id, rl.ordered_item_id AS ordered_item,
           COALESCE(rl.item_id, rl.ordered_item_id) AS item,
           rl.qty_received AS qty_received, 0 AS qty_refused, NULL AS refusal_reason, rl.lot_no AS lot_no
    FROM receipt_lines rl JOIN receipts r ON r.id = rl.receipt_id
    WHERE r.received_on >= :start AND r.status = 'posted' AND rl.qty_received > 0
    UNION ALL
    SELECT r.vendor_id, rl.ordered_item_id, '', 0, rl.qty_refused, rl.refusal_reason, rl.lot_no
    FROM receipt_lines rl JOIN receipts r ON r.id = rl.receipt_id
    WHERE r.received_on >= :start AND r.status = 'posted' AND rl.qty_refused > 0
)
SELECT v.name AS vendor,
       p.ordered_item AS ordered_item,
       p.item AS item,
       printf('%.4f', SUM(p.qty_received)) AS qty_received,
       printf('%.4f', SUM(p.qty_refused)) AS qty_refused,
       COALESCE((SELECT group_concat(x, ',') FROM (
           SELECT DISTINCT p2.refusal_reason AS x FROM parts p2
           WHERE p2.vendor_id = p.vendor_id AND p2.ordered_item IS p.ordered_item AND p2.item = p.item
             AND p2.refusal_reason IS NOT NULL ORDER BY x)), '') AS refusal_reason,
       COALESCE((SELECT group_concat(y, ',') FROM (
           SELECT DISTINCT p3.lot_no AS y FROM parts p3
           WHERE p3.vendor_id = p.vendor_id AND p3.ordered_item IS p.ordered_item AND p3.item = p.item
             AND p3.lot_no IS NOT NULL ORDER BY y)), '') AS lots
FROM parts p
JOIN vendors v ON v.id = p.vendor_id
GROUP BY v.name, p.ordered_item, p.item
ORDER BY v.name, ordered_item, item;

-- name: ap_invoices
-- Each vendor invoice entered during the episode (voided and rejected ones aside), by vendor and
-- normalised number: its status and the reasons of its active holds.
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no,
       i.status AS status,
       COALESCE((SELECT group_concat(x, ',') FROM (
           SELECT DISTINCT h.reason AS x FROM holds h
           WHERE h.invoice_id = i.id AND h.status = 'active' ORDER BY x)), '') AS hold_reasons
FROM ap_invoices i
JOIN vendors v ON v.id = i.vendor_id
WHERE i.created_on >= :start AND i.status NOT IN ('voided', 'rejected')
ORDER BY v.name, invoice_no;

-- name: ap_invoice_entries
-- One row per live invoice entered during the episode: a vendor document entered twice shows twice.
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no
FROM ap_invoices i
JOIN vendors v ON v.id = i.vendor_id
WHERE i.created_on >= :start AND i.status NOT IN ('voided', 'rejected')
ORDER BY v.name, invoice_no;

-- name: ap_invoice_lines
-- The lines of those invoices as entered, per vendor, number, kind and the item of the PO line an
-- item line bills (freight summed). AP-1.1 asks for the PO line and AP-1.2 for quantities and
-- prices as billed, not for the vendor's item code: a line that carries its PO line is keyed by
-- that line's ordered item, whether or not (and under whichever code, a substitute's included)
-- the agent also typed an item; a line without a PO line falls back to the item typed.
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no,
       l.kind AS kind,
       COALESCE(pl.item_id, l.item_id, '') AS item,
       printf('%.4f', SUM(COALESCE(l.qty, 0))) AS qty,
       printf('%.4f', MAX(COALESCE(l.unit_price, 0))) AS unit_price,
       printf('%.2f', SUM(l.amount_cents) / 100.0) AS amount
FROM ap_invoice_lines l
JOIN ap_invoices i ON i.id = l.invoice_id
JOIN vendors v ON v.id = i.vendor_id
LEFT JOIN po_lines pl ON pl.po_id = i.po_id AND pl.line_no = l.po_line AND l.kind = 'item'
WHERE i.created_on >= :start AND i.status NOT IN ('voided', 'rejected')
GROUP BY v.name, invoice_no, l.kind, COALESCE(pl.item_id, l.item_id, '')
ORDER BY v.name, invoice_no, kind, item;

-- Requirement map (issue 41): what PUR-1.1, PUR-3.2 and AP-2.1 to AP-2.3 state beyond the blocks above.

-- name: po_delivery
-- The warehouse each vendor's orders of the episode (cancelled ones aside) are delivered to
-- (PUR-1.1: into the main warehouse); several orders to one vendor are listed once per warehouse.
SELECT v.name AS vendor,
       COALESCE((SELECT group_concat(x, ',') FROM (
           SELECT DISTINCT COALESCE(p2.warehouse_id, '') AS x FROM purchase_orders p2
           WHERE p2.vendor_id = v.id AND p2.created_on >= :start AND p2.status <> 'cancelled' ORDER BY x)), '') AS warehouse
FROM vendors v
WHERE EXISTS (SELECT 1 FROM purchase_orders po
              WHERE po.vendor_id = v.id AND po.created_on >= :start AND po.status <> 'cancelled')
ORDER BY v.name;

-- name: lead_time_escalations
-- Per vendor with lead-time escalations: whether every one of them went to a requester of a
-- requisition line the escalated order orders (PUR-3.2: escalate to the requester).
SELECT v.name AS vendor,
       CASE WHEN EXISTS (
         SELECT 1 FROM escalations e JOIN purchase_orders p2 ON p2.id = e.record_id
         WHERE e.reason = 'lead_time' AND e.created_on >= :start AND p2.vendor_id = v.id
           AND e.to_user NOT IN (
             SELECT r.requester FROM requisition_lines rl JOIN requisitions r ON r.id = rl.requisition_id
             WHERE rl.po_id = p2.id
             UNION
             SELECT r.requester FROM po_lines pl JOIN requisitions r ON r.id = pl.requisition_id
             WHERE pl.po_id = p2.id))
       THEN 'no' ELSE 'yes' END AS to_requester
FROM vendors v
WHERE EXISTS (SELECT 1 FROM escalations e JOIN purchase_orders po ON po.id = e.record_id
              WHERE e.reason = 'lead_time' AND e.created_on >= :start AND po.vendor_id = v.id)
ORDER BY v.name;

-- name: invoice_holds
-- Each invoice entered during the episode (voided and rejected ones aside): whether it was
-- validated (posted) at any time, and whether each of its active holds names a line — by the
-- hold's line, or a note that names a line of the invoice ("line N", its item code or the item's
-- description) (AP-2.1 to AP-2.3: validate what matches, hold with a note naming the line and
-- do not validate what does not).
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no,
       CASE WHEN i.validated_on IS NOT NULL THEN 'yes' ELSE 'no' END AS validated,
       CASE WHEN NOT EXISTS (SELECT 1 FROM holds h WHERE h.invoice_id = i.id AND h.status = 'active') THEN ''
            WHEN EXISTS (SELECT 1 FROM holds h WHERE h.invoice_id = i.id AND h.status = 'active'
                         AND h.line_no IS NULL
                         AND NOT EXISTS (
                           SELECT 1 FROM ap_invoice_lines l
                           LEFT JOIN po_lines pl ON pl.po_id = i.po_id AND pl.line_no = l.po_line
                           LEFT JOIN items it ON it.id = COALESCE(pl.item_id, l.item_id)
                           WHERE l.invoice_id = i.id AND (
                                 instr(lower(COALESCE(h.note, '')), 'line ' || l.line_no) > 0
                              OR instr(lower(COALESCE(h.note, '')), 'line #' || l.line_no) > 0
                              OR (l.po_line IS NOT NULL AND instr(lower(COALESCE(h.note, '')), 'line ' || l.po_line) > 0)
                              OR (COALESCE(pl.item_id, l.item_id) IS NOT NULL
                                  AND instr(lower(COALESCE(h.note, '')), lower(COALESCE(pl.item_id, l.item_id))) > 0)
                              OR (it.description IS NOT NULL AND instr(lower(COALESCE(h.note, '')), lower(it.description)) > 0))))
            THEN 'no' ELSE 'yes' END AS hold_names_line
FROM ap_invoices i
JOIN vendors v ON v.id = i.vendor_id
WHERE i.created_on >= :start AND i.status NOT IN ('voided', 'rejected')
ORDER BY v.name, invoice_no;

-- name: requisition_links
-- Each item line of the requisitions approved before the episode: whether a live purchase order
-- orders it (PUR-1.1: each PO line linked to the requisition lines it orders; PUR-2.1: the
-- further lines named in `consolidates`).
SELECT r.id AS requisition,
       rl.line_no AS line,
       CASE WHEN rl.po_id IS NOT NULL AND EXISTS (SELECT 1 FROM purchase_orders po
                                                  WHERE po.id = rl.po_id AND po.status <> 'cancelled')
            THEN 'yes' ELSE 'no' END AS ordered
FROM requisition_lines rl
JOIN requisitions r ON r.id = rl.requisition_id
WHERE rl.item_id IS NOT NULL AND r.status IN ('approved', 'converted')
  AND (rl.po_id IS NULL OR EXISTS (SELECT 1 FROM purchase_orders p2 WHERE p2.id = rl.po_id AND p2.created_on >= :start))
ORDER BY r.id, rl.line_no;
