-- Projections of freight-accrual-revision, compared between the agent's final database and the
-- oracle's. An accrual is one of the agent's live manual entries (submitted, approved or posted;
-- not a reversal mirror) and the receipts it is derived from are the receipt ids its memo or
-- line memos name (receipt ids have a fixed width, so a substring is a whole id).

-- name: freight_accruals
WITH live AS (
  SELECT e.id, e.entry_date, e.status,
         COALESCE(e.memo, '') || ' ' ||
         COALESCE((SELECT group_concat(l.memo, ' ') FROM journal_lines l WHERE l.entry_id = e.id), '') AS txt,
         (SELECT SUM(l.debit_cents) FROM journal_lines l WHERE l.entry_id = e.id) AS total_cents,
         (SELECT MIN(l.account_id) FROM journal_lines l WHERE l.entry_id = e.id AND l.debit_cents > 0) AS debit_account,
         (SELECT MIN(l.account_id) FROM journal_lines l WHERE l.entry_id = e.id AND l.credit_cents > 0) AS credit_account,
         EXISTS (SELECT 1 FROM attachments a WHERE a.doc_type = 'journal_entry' AND a.doc_id = e.id) AS supported
  FROM journal_entries e
  WHERE e.source = 'manual' AND e.created_by = :agent AND e.reverses IS NULL
    AND e.status IN ('submitted', 'approved', 'posted')
),
named AS (
  SELECT live.*, r.id AS receipt,
         (SELECT COUNT(*) FROM receipts r2 WHERE instr(live.txt, r2.id) > 0) AS n_named
  FROM live JOIN receipts r ON instr(live.txt, r.id) > 0
)
SELECT receipt,
       ROUND(SUM(total_cents * 1.0 / n_named) / 100.0, 2) AS amount,
       MIN(debit_account) AS debit_account,
       MIN(credit_account) AS credit_account,
       MIN(entry_date) AS entry_date,
       COUNT(*) AS entries,
       MAX(n_named) AS receipts_named,
       MIN(supported) AS supported,
       group_concat(DISTINCT status) AS status
FROM named
GROUP BY receipt
ORDER BY receipt;

-- name: revised_accruals
-- Receipts reversed during the attempt and what became of the agent's accruals derived from them.
SELECT r.id AS receipt,
       group_concat(DISTINCT e.status) AS status
FROM receipts r
JOIN journal_entries e
  ON e.source = 'manual' AND e.created_by = :agent AND e.reverses IS NULL
 AND e.status NOT IN ('draft', 'returned')
 AND (instr(COALESCE(e.memo, ''), r.id) > 0
      OR EXISTS (SELECT 1 FROM journal_lines l WHERE l.entry_id = e.id AND instr(COALESCE(l.memo, ''), r.id) > 0))
WHERE r.status = 'reversed' AND r.reversed_on >= :start
GROUP BY r.id
ORDER BY r.id;
