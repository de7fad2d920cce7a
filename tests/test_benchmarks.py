"""The benchmarks' own arithmetic and measuring, which their printed goals rest on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_a_map_s_floor_is_whole_rounds() -> None:
    floor = _script("map_parallel").floor
    # 200 equal items of 50 ms, 16 at a time: 13 rounds, the last of 8 items as long.
    assert abs(floor(200, 16, 0.05) - 0.650) < 1e-9
    assert abs(floor(1000, 16, 0.05) - 3.150) < 1e-9
    assert abs(floor(16, 16, 0.05) - 0.05) < 1e-9


def test_a_child_s_peak_memory_is_its_own(tmp_path: Path) -> None:
    measure = _script("child").measure
    ballast = bytearray(300 * 1024 * 1024)  # this process's size: not the child's
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched, so resident
    got = measure([sys.executable, "-S", "-c", "print('ok')"], cwd=tmp_path,
                  env={"PATH": "/usr/bin:/bin"})
    assert got.code == 0 and got.stdout == "ok\n"
    assert 0 < got.peak_mb < 100, got.peak_mb
    del ballast


def test_thread_profiles_gather_every_thread_and_start_afresh(tmp_path: Path) -> None:
    import pstats
    import threading

    probe = _script("scale_probe")

    def in_a_thread() -> int:
        return sum(range(1000))

    profiles = probe.ThreadProfiles()
    try:
        worker = threading.Thread(target=in_a_thread)
        worker.start()
        worker.join()
        profiles.dump(str(tmp_path / "first.prof"))
        profiles.dump(str(tmp_path / "second.prof"))
    finally:
        profiles.close()

    def calls(path: Path) -> int:
        stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        return sum(nc for (_, _, name), (_, nc, *_) in stats.items() if name == "in_a_thread")

    assert calls(tmp_path / "first.prof") == 1  # the other thread's call, gathered
    assert calls(tmp_path / "second.prof") == 0  # gathered once: each dump starts afresh


def test_a_turn_s_instructions_are_a_multiple_of_its_own_floor() -> None:
    turn = _script("driver_turn")
    turn.INSTRUCTIONS.update({"python -c pass": 40_000_000, "rein next": 96_000_000,
                              "before: python -c pass": 50_000_000,
                              "before: rein next": 150_000_000})
    assert turn.x_python("rein next", 96_000_000) == 2.4
    assert turn.x_python("before: rein next", 150_000_000) == 3.0


def test_the_driver_turns_project_rein_toml_is_read_beside_the_cold_next(tmp_path: Path
                                                                        ) -> None:
    # `driver_turn.py --rein-toml` measures the cold read beside a rein.toml: its file must
    # be one that read answers beside, and reads without tomllib.
    from rein.core.toml_plain import read
    from rein.workers.driver.glance_config import settled

    text = _script("driver_turn").PROJECT_TOML
    (tmp_path / "rein.toml").write_text(text)
    assert read(text) is not None
    assert settled([("project", str(tmp_path / "rein.toml"))])
