"""The public front of the package is small on purpose; this pins it."""

import rein


def test_exported_members() -> None:
    assert rein.__all__ == sorted(rein.__all__)
    assert rein.__all__ == ["ExitCode", "Finding", "Harness", "Location", "ReinError",
                            "__version__"]
    for name in rein.__all__:
        assert hasattr(rein, name)
