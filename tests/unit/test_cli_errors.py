"""Bad specs and bad command lines through the real `lnk` entry point.

Each case runs `lnk sandbox run --spec FILE -- true` as a person would: exit status 125,
one `lnk-sandbox:` message on stderr naming the spec file, the key and (where the spec
has one) the line, and never a traceback. No case gets as far as starting bubblewrap.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

LNK = Path(sys.executable).parent / "lnk"
LNK_SANDBOX = Path(sys.executable).parent / "lnk-sandbox"


@dataclass(frozen=True)
class Layout:
    home: Path
    proj: Path
    lnk_home: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LNK_HOME": str(self.lnk_home),
            "LANG": "C.UTF-8",
        }


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    home = tmp_path.resolve() / "home"
    layout = Layout(home, home / "proj", home / ".lnk")
    layout.proj.mkdir(parents=True)
    layout.lnk_home.mkdir()
    return layout


def run_lnk(layout: Layout, *args: str, program: Path = LNK) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(program), *args], cwd=layout.proj, env=layout.env(), capture_output=True,
        text=True, timeout=60, check=False,
    )


def one_message(result: subprocess.CompletedProcess[str]) -> str:
    """The one `lnk-sandbox:` message, after checking status 125 and no traceback."""
    assert result.returncode == 125, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    messages = [line for line in result.stderr.splitlines() if "lnk-sandbox:" in line]
    assert len(messages) == 1, result.stderr
    return messages[0]


def link_out_of_project(layout: Layout) -> None:
    (layout.proj / "out").symlink_to(layout.home.parent)


def nothing(layout: Layout) -> None:
    del layout


@dataclass(frozen=True)
class Case:
    text: str | bytes
    key: str | None
    line: int | None
    says: str
    setup: Callable[[Layout], None] = nothing


CASES = {
    "bad TOML": Case('agent = "a"\n[files\nread = []\n', None, 2,
                     "not valid TOML: Expected ']' at the end of a table declaration"),
    "unclosed list": Case('[files]\nread = ["/srv",\n', None, 2,
                          "not valid TOML: Invalid value"),
    "not UTF-8": Case(b'agent = "a"\n# caf\xe9\n', None, None, "not UTF-8 text (byte 17)"),
    "unknown top key": Case('agent = "a"\nfilez = {}\n', "filez", 2, "unknown key 'filez'"),
    "unknown key in [files]": Case('[files]\nexecute = ["/srv"]\n', "files.execute", 2,
                                   "unknown key 'execute'"),
    "unknown key in a grant table": Case('[files]\nread = [{ path = "/srv", mode = "ro" }]\n',
                                         "files.read[0].mode", 2, "unknown key 'mode'"),
    "[files] not a table": Case('files = "all"\n', "files", 1, "must be a table, not a string"),
    "read not a list": Case('[files]\nread = "/srv"\n', "files.read", 2,
                            "must be a list of paths, not a string"),
    "grant not a path": Case('[files]\nread = [1]\n', "files.read[0]", 2, "not a number"),
    "programs not a list": Case('[commands]\nprograms = "git"\n', "commands.programs", 2,
                                "must be a list of strings, not a string"),
    "env.set not a table": Case('[env]\nset = ["A=1"]\n', "env.set", 2,
                                "must be a table of strings, not a list"),
    "empty path": Case('[files]\nread = [""]\n', "files.read[0]", 2, "must not be empty"),
    "relative path": Case('[files]\n\nwrite = ["build"]\n', "files.write[0]", 3,
                          "'build' is a relative path"),
    "'..' in a path": Case('[files]\nread = ["/srv/../etc"]\n', "files.read[0]", 2,
                           "contains '..'"),
    "~user": Case('[files]\nread = ["~root/x"]\n', "files.read[0]", 2,
                  "'~user' is not supported"),
    "duplicate grant": Case('[files]\nread = ["/srv", "/srv/"]\n', "files.read[1]", 2,
                            "'/srv' is also listed at files.read[0]"),
    "read and hidden": Case('[files]\nread = ["~/x"]\nhide = ["~/x"]\n', "files.hide[0]", 3,
                            "'~/x' is also listed at files.read[0]"),
    "write of /": Case('[files]\nwrite = ["/"]\n', "files.write[0]", 2,
                       "a write grant of '/' opens every file"),
    "write of ~": Case('[files]\nwrite = ["~"]\n', "files.write[0]", 2,
                       "a write grant of the home folder"),
    "write of home by its path": Case('[files]\nwrite = ["{home}"]\n', "files.write[0]", 2,
                                      "resolves to {home}, which is or holds the home folder"),
    "write of a folder holding home": Case('[files]\nwrite = ["{parent}"]\n', "files.write[0]",
                                           2, "resolves to {parent}, which is or holds the home"),
    "write_dot_files of a read grant": Case(
        '[files]\nread = ["~"]\nwrite_dot_files = ["~"]\n', "files.write_dot_files[0]", 3,
        "'~' is not one of files.write"),
    "unknown network mode": Case('[network]\nmode = "wifi"\n', "network.mode", 2,
                                 "'wifi' is not a network mode"),
    "network mode not a string": Case('[network]\nmode = true\n', "network.mode", 2,
                                      "must be a string, not a boolean"),
    "allow without proxy mode": Case('[network]\nallow = ["pypi.org"]\n', "network.allow", 2,
                                     "names are allowed only in proxy mode"),
    "allow '*'": Case('[network]\nmode = "proxy"\nallow = ["*"]\n', "network.allow[0]", 3,
                      "'*' alone opens every name"),
    "allow '*.com'": Case('[network]\nmode = "proxy"\nallow = ["*.com"]\n', "network.allow[0]",
                          3, "opens a whole top-level domain"),
    "allow '*.co.uk'": Case('[network]\nmode = "proxy"\n\nallow = ["pypi.org", "*.co.uk"]\n',
                            "network.allow[1]", 4, "opens a suffix anyone can register under"),
    "bad port": Case('[network]\nmode = "proxy"\nallow = ["pypi.org:99999"]\n',
                     "network.allow[0]", 3, "port '99999' is not a number from 1 to 65535"),
    "invalid env name": Case('[env]\nkeep = ["PATH", "BAD NAME"]\n', "env.keep[1]", 2,
                             "'BAD NAME' is not a variable name"),
    "LD_PRELOAD kept": Case('[env]\nkeep = ["PATH", "LD_PRELOAD"]\n', "env.keep[1]", 2,
                            "LD_PRELOAD makes the dynamic loader or libc load chosen code"),
    "LD_PRELOAD set": Case('[env]\n\n[env.set]\nLD_PRELOAD = "/tmp/x.so"\n',
                           "env.set.LD_PRELOAD", 4, "LD_PRELOAD makes the dynamic loader"),
    "kept and set": Case('[env]\nkeep = ["A"]\nset = { A = "1" }\n', "env.set.A", 3,
                         "A is both kept and set"),
    "program with a relative path": Case('[commands]\nprograms = ["bin/make"]\n',
                                         "commands.programs[0]", 2,
                                         "'bin/make' is a relative path"),
    "program not on this machine": Case('[commands]\nprograms = ["no-such-program-lnk"]\n',
                                        "commands.programs[0]", 2,
                                        "is not a program on this machine"),
    "bad agent name": Case('agent = "../other"\n', "agent", 1, "'../other' is not a valid name"),
    "bad session name": Case('\nsession = "a b"\n', "session", 2, "'a b' is not a valid name"),
    "grant table without path": Case('[files]\nread = [{ optional = true }]\n',
                                     "files.read[0]", 2, "a grant table needs a 'path'"),
    "optional not a bool": Case('[files]\nread = [{ path = "/srv", optional = "yes" }]\n',
                                "files.read[0].optional", 2, "must be true or false"),
    "grant inside $LNK_HOME": Case('[files]\n\nread = ["~/.lnk"]\n', "files.read[0]", 3,
                                   "is inside lnk-sandbox's settings"),
    "missing required grant": Case('[files]\nread = ["~/absent"]\n', "files.read[0]", 2,
                                   "cannot be granted: No such file or directory"),
    "link inside a nested grant": Case('[files]\nread = ["~"]\nwrite = ["./out"]\n',
                                       "files.write[0]", 3, "is a link (to ",
                                       link_out_of_project),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_spec(layout: Layout, name: str) -> None:
    case = CASES[name]
    case.setup(layout)

    def fill(text: str) -> str:
        return text.replace("{home}", str(layout.home)).replace("{parent}",
                                                                str(layout.home.parent))

    spec = layout.proj / "spec.toml"
    spec.write_bytes(case.text if isinstance(case.text, bytes) else fill(case.text).encode())
    message = one_message(run_lnk(layout, "sandbox", "run", "--spec", str(spec), "--", "true"))
    where = f"lnk-sandbox: {spec}"
    if case.line is not None:
        where += f":{case.line}"
    if case.key is not None:
        where += f": key {case.key}"
    assert message.startswith(where + ": "), message
    assert fill(case.says) in message


def test_enough_distinct_cases() -> None:
    assert len(CASES) >= 24
    assert len({(c.key, c.says) for c in CASES.values()}) == len(CASES)


def test_the_same_through_lnk_sandbox_and_plan(layout: Layout) -> None:
    spec = layout.proj / "spec.toml"
    spec.write_text('[files]\nread = ["relative"]\n')
    expected = f"lnk-sandbox: {spec}:2: key files.read[0]: 'relative' is a relative path"
    result = run_lnk(layout, "run", "--spec", str(spec), "--", "true", program=LNK_SANDBOX)
    assert one_message(result) == expected
    result = run_lnk(layout, "sandbox", "plan", "--spec", str(spec), "--", "true")
    assert one_message(result) == expected


def test_a_hint_follows_the_message(layout: Layout) -> None:
    spec = layout.proj / "spec.toml"
    spec.write_text('[files]\nwrite = ["/"]\n')
    result = run_lnk(layout, "sandbox", "run", "--spec", str(spec), "--", "true")
    one_message(result)
    assert result.stderr == (
        f"lnk-sandbox: {spec}:2: key files.write[0]: a write grant of '/' opens every file "
        "on the machine\n  hint: grant the folders the command writes\n")


def test_a_spec_that_cannot_be_read(layout: Layout) -> None:
    spec = layout.proj / "absent.toml"
    message = one_message(run_lnk(layout, "sandbox", "run", "--spec", str(spec), "--", "true"))
    assert message == f"lnk-sandbox: {spec}: cannot read the spec: No such file or directory"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("sandbox", "run"), "no command given"),
        (("sandbox", "run", "--"), "no command given"),
        (("sandbox", "run", "--bogus", "--", "true"), "unrecognized arguments: --bogus"),
        (("sandbox", "frobnicate"), "invalid choice: 'frobnicate'"),
        (("sandbox", "run", "--spec"), "argument --spec: expected one argument"),
        (("sandbox",), "the following arguments are required"),
    ],
)
def test_bad_command_lines(layout: Layout, args: tuple[str, ...], says: str) -> None:
    message = one_message(run_lnk(layout, *args))
    assert message.startswith("lnk-sandbox: ")
    assert says in message


@pytest.mark.parametrize("args", [(), ("run", "--", "true"), ("--help-me",)])
def test_lnk_without_the_sandbox_word(layout: Layout, args: tuple[str, ...]) -> None:
    result = run_lnk(layout, *args)
    assert result.returncode == 125
    assert result.stderr.startswith("usage: lnk sandbox ")
    assert "Traceback" not in result.stderr


def test_a_spec_nobody_allowed_is_refused_with_its_own_class(
        layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    """A harness tells a refusal to allow from a failure by its class, not by its text."""
    from supervisor.api import ensure_allowed
    from supervisor.errors import NotAllowedError
    from supervisor.stages import snapshot_for

    spec = layout.proj / "spec.toml"
    spec.write_text('[files]\nwrite = ["."]\n')
    for name, value in layout.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(layout.proj)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    snapshot = snapshot_for(str(spec))
    with pytest.raises(NotAllowedError) as refused:
        ensure_allowed(snapshot, yes=False)
    assert "was not allowed before" in refused.value.message
    ensure_allowed(snapshot, yes=True)
    ensure_allowed(snapshot, yes=False)  # remembered now
