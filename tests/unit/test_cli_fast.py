"""The argparse-free reading of plain `run` and `exec` command lines agrees with
argparse on every form it accepts, and leaves every other form to argparse."""

from __future__ import annotations

from typing import Any

import pytest

from supervisor.cli import _fast, _parser

ACCEPTED = [
    ["run", "--", "make", "test"],
    ["run", "--spec", "s.toml", "--", "make"],
    ["run", "--spec=s.toml", "--yes", "--report", "r.jsonl", "--", "sh", "-c", "x -- y"],
    ["run", "--yes", "--", "--help"],
    ["run", "--decide-fd", "3", "--decide-timeout=2.5", "--", "curl", "x"],
    ["run", "--timeout", "30", "--yes", "--", "sleep", "60"],
    ["run", "--timeout=0.5", "--", "true"],
]
EXEC = "0123456789abcdef0123456789abcdef"
LEFT_TO_ARGPARSE = [
    ["run", "make"],
    ["run", "--spec", "--", "make"],
    ["run", "-h", "--", "make"],
    ["run", "--bogus", "--", "make"],
    ["run", "--report=", "--", "make"],
    ["exec", "--", "true"],
    ["exec", "ID", "--yes", "--", "true"],
    ["plan", "--", "true"],
    ["learn", "--", "true"],
    [],
]


@pytest.mark.parametrize("argv", ACCEPTED)
def test_the_fast_reading_agrees_with_argparse(argv: list[str]) -> None:
    fast = _fast(argv)
    assert fast is not None
    parsed = vars(_parser("lnk sandbox").parse_args(argv))
    command = parsed.pop("command")
    assert command[:1] == ["--"] and command[1:] == fast.pop("command")
    assert {k: v for k, v in fast.items() if k in parsed} == parsed


def _options(argv: list[str]) -> dict[str, Any]:
    """The fast reading of a line it must read."""
    found = _fast(argv)
    assert found is not None, argv
    return found


def test_exec_as_wrap_prints_it() -> None:
    assert _fast(["exec", EXEC, "--", "true", "--"]) == {
        "action": "exec", "snapshot_id": EXEC, "spec": None, "report": None, "yes": False,
        "decide_fd": None, "decide_timeout": None, "timeout": None,
        "command": ["true", "--"]}
    assert _options(["exec", EXEC, "--report=r.jsonl", "--", "true"])["report"] == "r.jsonl"
    assert _options(["exec", EXEC, "--report", "r", "--", "x"])["command"] == ["x"]
    assert _options(["exec", EXEC, "--decide-fd=4", "--", "x"])["decide_fd"] == "4"
    assert _options(["exec", EXEC, "--timeout", "9", "--", "x"])["timeout"] == "9"


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_other_forms_go_to_argparse(argv: list[str]) -> None:
    assert _fast(argv) is None
