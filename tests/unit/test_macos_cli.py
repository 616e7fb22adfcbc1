"""`lnk sandbox plan --os macos` prints the profile and its parameters on any OS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def plan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(tmp_path), "LNK_HOME": str(tmp_path / ".lnk"),
           "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "supervisor", "plan", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=60)


def test_plan_for_macos_prints_the_profile_and_its_parameters(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[files]\nread = ["~"]\nwrite = ["."]\n[commands]\nprograms = ["sh"]\n')
    done = plan(tmp_path, "--os", "macos", "--spec", str(spec), "--", "sh", "-c", "make")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"# spec: {spec}\n")
    assert "\n(version 1)\n" in out and "\n(deny default)\n" in out
    assert '(literal (param "PROGRAM_0"))' in out
    assert f"; READ_0={os.path.realpath(tmp_path)}    <- files.read[0]: ~\n" in out
    assert f"; WRITE_1={os.path.realpath(tmp_path / 'proj')}    <- files.write[0]: .\n" in out
    assert "; KEEP_" in out and "/proj/.git" in out
    assert out.rstrip().endswith("-- sh -c make")
    assert out.count("/usr/bin/sandbox-exec -p PROFILE") == 1


def test_plan_for_linux_is_still_the_mount_plan(tmp_path: Path) -> None:
    done = plan(tmp_path, "--os", "linux", "--", "true")
    assert done.returncode == 0, done.stderr
    assert "# mounts, in order:" in done.stdout and "(deny default)" not in done.stdout


def test_an_unknown_os_is_a_usage_error(tmp_path: Path) -> None:
    done = plan(tmp_path, "--os", "windows", "--", "true")
    assert done.returncode == 125 and "invalid choice: 'windows'" in done.stderr
