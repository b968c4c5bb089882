"""RetentionPolicy's run machinery: the runner (schedule, one run at a time), the analysis engines, forced
retention and history. `handlers/retention_policy.py` registers the kopf entry points."""
