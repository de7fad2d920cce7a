"""Harness quality, measured (`rein eval`): one scenario suite under several harness
configurations, and which is better.

A flow built on the engine, beside the development flow: every trial of a graph or a brief
is a run of the one ``Harness`` in a workspace of its own; a Harbor task is the task's own
scripts around such a run. Pipeline: :mod:`~rein.eval.scenarios` and
:mod:`~rein.eval.configs` (what runs) → :mod:`~rein.eval.runner` (the lanes, each trial once,
recorded by :mod:`~rein.eval.ledger`) → :mod:`~rein.eval.results` (solve rates with Wilson
intervals, exact paired tests, failures by criterion, the risk of each change) →
:mod:`~rein.eval.render`, :mod:`~rein.eval.report_html`, :mod:`~rein.eval.atif`.
"""
