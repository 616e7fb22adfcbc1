"""tools/macos_probe.py, the probe a person with a Mac runs: it lists its probes on any
OS, refuses to probe anywhere but a Mac, and has a probe for each defect of the review
(docs/macos.md) whose outcome no source settled or that a fix rests on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "tools" / "macos_probe.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_it_lists_its_probes_anywhere_and_probes_only_on_a_mac() -> None:
    listed = run("--list")
    assert listed.returncode == 0
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    assert len(ids) == len(set(ids)) >= 35
    if sys.platform != "darwin":
        refused = run()
        assert refused.returncode == 2 and "runs on a Mac" in refused.stderr


def test_every_defect_of_the_review_is_probed() -> None:
    listed = run("--list").stdout
    numbers = {int(n) for n in re.findall(r"\b(\d{1,2})\b", " ".join(
        line.rsplit("review", 1)[1] for line in listed.splitlines()))}
    missing = sorted(set(range(1, 24)) - numbers)
    assert missing == [], f"no probe for review defects {missing}"
