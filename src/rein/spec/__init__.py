"""The specification flow (`rein spec`): a brief becomes a reviewed specification bundle
whose development plan `rein dev` builds.

Built on the engine, as `rein dev` is: the documents are written by the driver as nodes of
an AGS graph run by the one ``Harness``; rein's checker (:mod:`rein.spec.checks`, with the
rules of :mod:`rein.spec.documents`) decides each; a person approves at the graph's gates;
:mod:`rein.spec.flow` starts the runs, publishes READY (:mod:`rein.spec.publish`) and
reopens what a change invalidates (:mod:`rein.spec.provenance`).
"""
