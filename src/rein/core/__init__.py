"""The shared vocabulary every layer may import: typed ids, explicit states, failure classes,
tiers, usage and budgets, time. Nothing here does work or imports another rein layer."""
