-- Projections of ap-invoice-backlog, keyed by business keys (vendor name, invoice number as billed
-- with `-`, ` ` and `/` removed, message subject) — never by the ids the ERP gives the agent's
-- documents. Invoices entered during the episode are those created on or after :start.

-- name: ap_invoices
-- Each vendor invoice entered during the episode (voided and rejected ones aside): its status,
-- the reasons of its active holds and the invoice date entered.
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no,
       i.status AS status,
       COALESCE((SELECT group_concat(x, ',') FROM (
           SELECT DISTINCT h.reason AS x FROM holds h
           WHERE h.invoice_id = i.id AND h.status = 'active' ORDER BY x)), '') AS hold_reasons,
       i.invoice_date AS invoice_date
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
-- The lines of those invoices as entered, per vendor, number, kind and item (lines of one kind
-- and item added up: a non-PO invoice's lines, freight, tax).
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
-- A line that names its PO line bills that line's item: AP-1.2 asks for the PO line, not for the
-- item code to be typed again (issue 41: no key demands what no clause asks for).
LEFT JOIN po_lines pl ON pl.po_id = i.po_id AND pl.line_no = l.po_line
WHERE i.created_on >= :start AND i.status NOT IN ('voided', 'rejected')
GROUP BY v.name, invoice_no, l.kind, COALESCE(pl.item_id, l.item_id, '')
ORDER BY v.name, invoice_no, kind, item;

-- name: nonpo_coding
-- The coding of the invoices entered without a PO: amount per account (a line without an account
-- posts to the vendor's default account, as validation does).
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no,
       COALESCE(l.account_id, v.default_account, '6900') AS account,
       printf('%.2f', SUM(l.amount_cents) / 100.0) AS amount
FROM ap_invoice_lines l
JOIN ap_invoices i ON i.id = l.invoice_id
JOIN vendors v ON v.id = i.vendor_id
WHERE i.created_on >= :start AND i.status NOT IN ('voided', 'rejected') AND i.po_id IS NULL
  AND l.kind IN ('item', 'other')
GROUP BY v.name, invoice_no, account
ORDER BY v.name, invoice_no, account;

-- name: set_aside
-- The AP inbox's messages that were not processed: each with the disposition recorded last
-- ('none' when nobody recorded one).
SELECT m.subject AS subject,
       COALESCE(m.disposition, 'none') AS disposition
FROM messages m
WHERE m.direction = 'in' AND m.box = 'ap' AND COALESCE(m.disposition, 'none') <> 'processed'
ORDER BY m.subject;

-- name: line_holds
-- Each invoice entered during the episode (voided and rejected ones aside): whether each of its
-- active `price` and `quantity` holds names a line — by the hold's line, or a note that names a
-- line of the invoice ("line N", its item code or the item's description) (AP-2.2, AP-2.3: hold
-- with a note naming the line); '' when it has no such hold.
SELECT v.name AS vendor,
       upper(replace(replace(replace(i.invoice_no, '-', ''), ' ', ''), '/', '')) AS invoice_no,
       CASE WHEN NOT EXISTS (SELECT 1 FROM holds h WHERE h.invoice_id = i.id AND h.status = 'active'
                             AND h.reason IN ('price', 'quantity')) THEN ''
            WHEN EXISTS (SELECT 1 FROM holds h WHERE h.invoice_id = i.id AND h.status = 'active'
                         AND h.reason IN ('price', 'quantity') AND h.line_no IS NULL
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
