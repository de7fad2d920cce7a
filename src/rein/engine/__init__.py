"""The state machine: scheduling, node kinds, criteria, failure ladder, budgets, approvals."""
