"""``python -m rein``: the ``rein`` command (the script ``rein init`` writes runs it so)."""

from rein.cli import run

run()
