"""The six node kinds of AGS §7, one module each (``task`` and ``decision`` in one), with
what they share: an attempt (:mod:`.attempt`, :mod:`.worker_call`), how it ended and what
the next one is told (:mod:`.attempt_end`), the failure ladder (:mod:`.ladder`) and the
containers' fragments (:mod:`.fragments`). The registry that dispatches on a node's type is
:data:`rein.engine.run.nodes.KINDS`, beside the one dispatch that uses it.
"""
