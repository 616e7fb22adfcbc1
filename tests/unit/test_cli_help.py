"""Help and version through the real entry points, as a newcomer first types them."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from supervisor.helptext import COMMANDS, SPEC_FORMAT
from supervisor.spec import parse_spec

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


def lnk(*args: str, program: str = "lnk") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / program), *args], capture_output=True, text=True,
                          timeout=30, check=False)


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"], ["sandbox", "--help"]])
def test_lnk_help_is_real_help(args: list[str]) -> None:
    done = lnk(*args)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: lnk sandbox [-h] [--version] COMMAND ...\n")
    words = " ".join(done.stdout.split())  # argparse wraps at the terminal's width
    for name, (text, _) in COMMANDS.items():
        assert f" {name} {text} " in words
    assert SPEC_FORMAT in done.stdout
    assert "exit status: the command's own;" in done.stdout


def test_lnk_sandbox_help_is_the_same_help() -> None:
    mine = lnk("--help", program="lnk-sandbox").stdout.splitlines()
    assert mine[0] == "usage: lnk-sandbox [-h] [--version] COMMAND ..."
    assert mine[1:] == lnk("--help").stdout.splitlines()[1:]


@pytest.mark.parametrize("args", [["--version"], ["sandbox", "--version"]])
def test_version(args: list[str]) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert (lnk(*args).returncode, lnk(*args).stdout) == (0, f"lnk-sandbox {project['version']}\n")
    assert lnk("--version", program="lnk-sandbox").stdout == f"lnk-sandbox {project['version']}\n"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_commands_help_has_an_example_and_points_at_the_spec_format(command: str) -> None:
    done = lnk("sandbox", command, "--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert f"\nexample:\n  {COMMANDS[command][1].splitlines()[0]}\n" in done.stdout
    assert done.stdout.endswith("the spec's format: `lnk sandbox --help` shows every key;\n"
                                'README.md, "The spec (TOML)", is the whole reference\n')


def test_the_spec_format_shown_is_a_spec_lnk_accepts() -> None:
    spec = parse_spec(SPEC_FORMAT.encode(), "<help>")
    assert spec.files.write[0].path == "."
    assert spec.commands.programs == ("git", "python3")
    assert spec.network.mode == "proxy"


@pytest.mark.parametrize(("args", "says"), [
    ([], "lnk: no command given: lnk's commands are under `lnk sandbox`, as in: "
         "lnk sandbox run -- make test\n"),
    (["run"], "lnk: unknown command 'run': lnk's commands are under `lnk sandbox`, as in: "
              "lnk sandbox run -- make test\n"),
])
def test_lnk_without_sandbox_says_where_the_commands_are(args: list[str], says: str) -> None:
    done = lnk(*args)
    assert (done.returncode, done.stdout) == (125, "")
    assert done.stderr == ("usage: lnk sandbox COMMAND [ARG...]   (lnk --help lists the "
                           "commands)\n" + says)


def test_the_spec_format_shown_has_every_key_the_spec_takes() -> None:
    """`lnk sandbox --help` says it shows every key: each of the spec's own key tables
    (what the validator accepts, and nothing else) is in the example, as a key."""
    from supervisor import spec as spec_module

    document = tomllib.loads(SPEC_FORMAT)
    assert sorted(document) == sorted(spec_module._TOP_KEYS)
    tables = {"files": spec_module._FILES_KEYS, "network": spec_module._NETWORK_KEYS,
              "limits": spec_module._LIMIT_KEYS, "env": ("keep", "set"),
              "commands": ("programs",)}
    for table, keys in tables.items():
        assert sorted(document[table]) == sorted(keys), table
    parsed = parse_spec(SPEC_FORMAT.encode(), "<help>")
    assert parsed.limits.cpu is not None and parsed.network.unix is not None
