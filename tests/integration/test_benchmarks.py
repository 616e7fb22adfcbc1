"""Every benchmark runs, in its smallest round, and prints its ratio.

Nothing ran the benchmarks, so they rotted: benchmarks/proxy.py failed as shipped (its
spec granted no working directory) and nobody knew. A smoke run here keeps each one
working as the code under it changes; no figure is asserted (figures belong to the
benchmarks' own full runs, not to a timed test on a loaded machine). A benchmark added
to the folder without a line here fails the first test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# Each benchmark's smallest round, and what its ratio line looks like.
SMOKE: dict[str, tuple[list[str], str]] = {
    "api_start.py": (["--runs", "1"], r"x\d+\.\d+ of cli"),
    "home_mounts.py": (["--runs", "1"], r"entries shown: 10 .* x\d+\.\d+ of home bound whole"),
    "exec_watch.py": (["--execs", "10", "--rounds", "1", "--receivers", "1"],
                      r"throughput ratio \d+\.\d+"),
    "placeholder_lock.py": (["--rounds", "1", "--runs", "3"], r"ratio to uncontended"),
    "proxy.py": (["--size-mib", "1", "--requests", "3", "--downloads", "1", "--rounds", "1"],
                 r"ratio tunnel .* throughput x\d+\.\d+"),
    "start.py": (["--runs", "1"], r"default\s+\d+\.\d+\s+\d+\.\d+"),
}


def test_every_benchmark_has_a_smoke_run() -> None:
    assert {p.name for p in BENCHMARKS.glob("*.py")} == set(SMOKE)


@pytest.mark.requires_bwrap
@pytest.mark.requires_userns
@pytest.mark.requires_seccomp_notify
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_benchmark_runs_and_prints_its_ratio(name: str, tmp_path: Path) -> None:
    arguments, ratio = SMOKE[name]
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), *arguments],
                          capture_output=True, text=True, timeout=580, cwd=tmp_path,
                          env={**os.environ, "LNK_HOME": str(tmp_path / ".lnk")})
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert re.search(ratio, done.stdout), f"{name} printed no ratio:\n{done.stdout}"
