-- Projections of requisition-approval-queue. Requisitions are keyed by their ids: every one
-- graded here was planted by the generator (the agent creates none), so its id is fixed.

-- name: decisions
-- Every requisition that waited on the agent at the start, or that the agent had submitted
-- itself: its status, who it waits on now (when still submitted), and the reason code the
-- agent gave with its last decision on it (`[code]` at the head of the approval request's note).
SELECT r.id AS requisition,
       r.status AS status,
       CASE WHEN r.status = 'submitted' THEN COALESCE(r.assigned_to, '') ELSE '' END AS routed_to,
       COALESCE((SELECT CASE WHEN a.note LIKE '[%]%' THEN substr(a.note, 2, instr(a.note, ']') - 2) ELSE '' END
                 FROM approval_requests a
                 WHERE a.doc_id = r.id AND a.acted_by = :agent AND a.acted_on >= :start
                 ORDER BY a.id DESC LIMIT 1), '') AS reason
FROM requisitions r
WHERE r.created_on < :start
  AND (r.requester = :agent
       OR EXISTS (SELECT 1 FROM approval_requests a
                  WHERE a.doc_id = r.id AND a.approver = :agent AND a.requested_on < :start))
ORDER BY r.id;

-- name: agent_approvals
-- Requisitions the agent approved during the episode.
SELECT r.id AS requisition
FROM requisitions r
WHERE r.approved_by = :agent AND r.approved_on >= :start
ORDER BY r.id;

-- name: return_notices
-- Requisitions the agent returned during the episode, and whether the agent sent the requester
-- a message naming the requisition.
SELECT r.id AS requisition,
       CASE WHEN EXISTS (
         SELECT 1 FROM messages m JOIN users u ON u.id = r.requester
         WHERE m.direction = 'out' AND m.created_by = :agent AND m.created_on >= :start
           AND (instr(m.subject || ' ' || m.body, r.id) > 0 OR m.related_id = r.id)
           AND (instr(lower(m."to"), lower(u.email)) > 0 OR instr(lower(m."to"), lower(r.requester)) > 0)
       ) THEN 'yes' ELSE 'no' END AS notified
FROM requisitions r
WHERE r.status = 'returned'
  AND EXISTS (SELECT 1 FROM approval_requests a
              WHERE a.doc_id = r.id AND a.acted_by = :agent AND a.status = 'returned' AND a.acted_on >= :start)
ORDER BY r.id;
