"""The macOS workflow (.github/workflows/macos.yml) cannot run here: no Mac. What can be
checked here is that GitHub would take it and that it runs what the repository has: it
parses (PyYAML, which the test extra brings), runs on hosted macOS runners, installs an
extra pyproject.toml defines with a Python requires-python allows, and every command it
runs names a file or folder of the repository and options that program accepts; the
probe's report it keeps is the file it told the probe to write."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "macos.yml"
# GitHub's hosted macOS labels (arm64; -intel and -large for x86_64), as its docs list.
HOSTED_MACOS = re.compile(r"macos-(latest|1[4-9]|2[0-9])(-intel|-large|-xlarge)?")
# Actions it may use, each from GitHub's own organisation at a major version.
ACTIONS = re.compile(r"actions/(checkout|setup-python|upload-artifact)@v[0-9]+")


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(data, dict)
    return data


def job() -> dict[str, Any]:
    jobs = workflow()["jobs"]
    assert list(jobs) == ["macos"]
    return dict(jobs["macos"])


def expand(text: str, os_label: str) -> str:
    """The workflow's expressions this job uses, as a runner expands them."""
    rest = text.replace("${{ matrix.os }}", os_label)
    assert "${{" not in rest, f"an expression the test does not know: {rest}"
    return rest


def commands(os_label: str) -> list[list[str]]:
    """Every command line of every `run` step, split as the shell splits it."""
    found = []
    for step in job()["steps"]:
        for line in str(step.get("run", "")).splitlines():
            if line.strip():
                found.append(shlex.split(expand(line, os_label)))
    return found


def test_it_parses_and_runs_on_push_pull_requests_and_by_hand() -> None:
    data = workflow()
    # YAML 1.1 reads the key `on` as true; GitHub reads it as `on`.
    triggers = data.get("on", data.get(True))
    assert isinstance(triggers, dict)
    assert set(triggers) == {"push", "pull_request", "workflow_dispatch"}
    assert data["permissions"] == {"contents": "read"}


def test_it_runs_on_hosted_macs_and_ends_in_time() -> None:
    macos = job()
    labels = macos["strategy"]["matrix"]["os"]
    assert labels and all(HOSTED_MACOS.fullmatch(label) for label in labels), labels
    assert macos["runs-on"] == "${{ matrix.os }}"
    assert macos["strategy"]["fail-fast"] is False  # one macOS failing shows the other's
    assert 0 < macos["timeout-minutes"] <= 60


def test_its_actions_are_githubs_own_at_a_major_version() -> None:
    used = [step["uses"] for step in job()["steps"] if "uses" in step]
    assert used and all(ACTIONS.fullmatch(action) for action in used), used


def test_its_python_is_one_lnk_sandbox_supports() -> None:
    setup = next(step for step in job()["steps"]
                 if str(step.get("uses", "")).startswith("actions/setup-python@"))
    version = tuple(int(part) for part in str(setup["with"]["python-version"]).split("."))
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    least = tuple(int(part) for part in
                  re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"]).groups())  # type: ignore[union-attr]
    assert version >= least


def test_every_command_runs_what_the_repository_has() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    seen: set[str] = set()
    for os_label in job()["strategy"]["matrix"]["os"]:
        lines = commands(os_label)
        assert lines[0] == ["python", "-m", "venv", ".venv"]  # the venv every later one uses
        for argv in lines[1:]:
            assert argv[0] == ".venv/bin/python", argv
            if argv[1:4] == ["-m", "pip", "install"]:
                extras = re.fullmatch(r"\.\[([a-z,]+)\]", argv[-1])
                assert extras is not None, argv
                for extra in extras.group(1).split(","):
                    assert extra in project["optional-dependencies"], extra
                seen.add("install")
            elif argv[1:4] == ["-P", "-m", "pytest"]:
                targets = [arg for arg in argv[4:] if not arg.startswith("-")]
                assert targets and all((REPO / target).is_dir() for target in targets)
                assert "pytest" in " ".join(project["optional-dependencies"]["test"])
                seen.add("pytest")
            elif argv[1] == "tools/macos_probe.py":
                probe = REPO / argv[1]
                assert probe.is_file()
                # Its options are the probe's own: its --help names each one used.
                usage = subprocess.run([sys.executable, str(probe), "--help"],
                                       capture_output=True, text=True, check=True).stdout
                for option in (arg for arg in argv[2:] if arg.startswith("--")):
                    assert option in usage, option
                seen.add("probe")
            else:
                raise AssertionError(f"a command the test does not know: {argv}")
    assert seen == {"install", "pytest", "probe"}


def test_the_probes_report_is_kept_whatever_happened() -> None:
    steps = job()["steps"]
    for os_label in job()["strategy"]["matrix"]["os"]:
        probe_line = next(argv for argv in commands(os_label)
                          if argv[1:2] == ["tools/macos_probe.py"])
        report = probe_line[probe_line.index("--out") + 1]
        upload = next(step for step in steps
                      if str(step.get("uses", "")).startswith("actions/upload-artifact@"))
        assert expand(upload["with"]["path"], os_label) == report
        assert upload["with"]["if-no-files-found"] == "error"
    # The probe and its upload run after a failed unit test too (not after a cancel).
    for step in steps[-2:]:
        assert step["if"] == "${{ !cancelled() }}"
