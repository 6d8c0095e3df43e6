"""Host side of the process track: campaigns, attempts, backends, grading, validation, reports."""
