"""Run mechanics: how a run runs. Prepare, schedule, execute a node and its kind, judge it
(criteria), budgets, the approval queue a run asks, the record it writes."""
