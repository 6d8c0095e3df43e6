-- Projections of capacity-and-promise-dates. The week's work orders are the ones the production
-- supervisor opened on the start date (the planner cannot open or cancel one for her).

-- name: plan_jobs
SELECT w.id AS job, :start AS release
FROM work_orders w
WHERE w.created_on = :start AND w.created_by = 'ines.costa'

-- name: plan_operations
SELECT o.wo_id AS job, o.step AS step, o.work_center_id AS resource, o.day AS day, ROUND(SUM(o.hours), 4) AS hours
FROM wo_operations o
WHERE o.status = 'scheduled'
GROUP BY o.wo_id, o.step, o.work_center_id, o.day

-- name: plan_routing
SELECT w.id AS job, r.step AS step, r.work_center_id AS resource,
       ROUND(r.setup_hours + w.qty * r.hours_per_unit, 4) AS hours
FROM work_orders w
JOIN routings r ON r.item_id = w.item_id
WHERE w.created_on = :start AND w.created_by = 'ines.costa'

-- name: plan_capacity
SELECT id AS resource, daily_capacity_hours AS hours FROM work_centers

-- name: plan_closed_days
SELECT day FROM calendar

-- name: promises
-- Per sales order built by the week's work orders: whether a promise was given and whether it is
-- the first working day after the work order's last live booking (SCH-3.1).
WITH RECURSIVE d(day) AS (
  SELECT :start UNION ALL SELECT date(day, '+1 day') FROM d WHERE day < date(:start, '+120 day')
),
wd AS (
  SELECT day FROM d WHERE strftime('%w', day) NOT IN ('0', '6') AND day NOT IN (SELECT day FROM calendar)
),
fin AS (
  SELECT wo_id, MAX(day) AS last FROM wo_operations WHERE status = 'scheduled' GROUP BY wo_id
)
SELECT s.id AS so, w.id AS wo,
       CASE WHEN p.promise_date IS NULL THEN 0 ELSE 1 END AS promised,
       CASE WHEN p.promise_date IS NOT NULL AND fin.last IS NOT NULL
                 AND p.promise_date = (SELECT MIN(wd.day) FROM wd WHERE wd.day > fin.last) THEN 1 ELSE 0 END AS promise_ok
FROM sales_orders s
JOIN so_lines l ON l.so_id = s.id
JOIN work_orders w ON w.item_id = l.item_id AND w.created_on = :start AND w.created_by = 'ines.costa'
LEFT JOIN so_promises p ON p.so_id = s.id
LEFT JOIN fin ON fin.wo_id = w.id
WHERE s.order_date = :start
