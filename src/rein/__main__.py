"""``python -m rein``: the ``rein`` command (the script ``rein init`` writes runs it so)."""

if __name__ == "__main__":
    from rein.cli import run

    run()
