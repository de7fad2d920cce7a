"""The development flow (`rein dev`): a brief becomes a verified, committed product.

Built on the engine: the plan and the features are AGS graphs run by the one ``Harness``;
the checks that decide a plan, a verify and a handoff are rein's checkers
(:mod:`rein.dev.checks`); :mod:`rein.dev.flow` only starts the next run and says where the
flow stands.
"""
