-- Projections of month-end-close, keyed by account number (the chart is fixed).

-- name: september_close
-- The September close by account: posted activity dated in September (debit positive).
SELECT l.account_id AS account,
       printf('%.2f', SUM(l.debit_cents - l.credit_cents) / 100.0) AS activity
FROM journal_lines l
JOIN journal_entries e ON e.id = l.entry_id
WHERE e.status IN ('posted', 'reversed') AND e.entry_date >= '2026-09-01' AND e.entry_date <= '2026-09-30'
GROUP BY l.account_id
ORDER BY l.account_id;

-- name: cutoff_reversal
-- Unbilled receivables by month: accrued at 30 September, reversed in October.
SELECT substr(e.entry_date, 1, 7) AS month,
       printf('%.2f', SUM(l.debit_cents - l.credit_cents) / 100.0) AS activity
FROM journal_lines l
JOIN journal_entries e ON e.id = l.entry_id
WHERE e.status IN ('posted', 'reversed') AND l.account_id = '1120'
GROUP BY substr(e.entry_date, 1, 7)
ORDER BY month;
