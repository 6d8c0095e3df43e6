"""The process grader (§7): projections vs reference, audit rules, ledger ties, text checks.

Public entry point: `grade_attempt(task, scenario, *, final_db, audit_jsonl, faults_jsonl,
workspace_dir, out_dir, condition) -> GradeReport` (contracts §10).
"""
from orchestrator.grading.grader import CheckResult, GradeReport, grade_attempt, resolve_truth

__all__ = ["CheckResult", "GradeReport", "grade_attempt", "resolve_truth"]
