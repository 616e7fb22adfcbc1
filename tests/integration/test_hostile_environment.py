"""What the environment hands lnk, at its worst: every case a clear refusal or a run.

A person's or a harness's environment is input too: $HOME, $LNK_HOME, PATH,
$XDG_RUNTIME_DIR, the working directory, the files --spec and --report name, the
standard streams. Each hostile form here (relative, missing, a file, a FIFO, a device,
/proc, too long, `/` and `//`, a folder that cannot be entered or written, one removed
under the shell) either runs, or is refused with status 125 and one `lnk-sandbox:`
message naming the cause (a hint after it), never a traceback; nothing is left behind:
no process of the run, no placeholder in the working directory, no folder made where
the bad setting pointed. As root and as the unprivileged user.
"""

from __future__ import annotations

import os
import secrets
import shlex
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.processes import command_lines, wait_gone
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

LONG = "/lnk-hostile" + "/x" * 2000  # within PATH_MAX, thousands of components
TOO_LONG = "/lnk-hostile" + "/x" * 3000  # past PATH_MAX


def nothing(sandbox: Sandbox) -> None:
    del sandbox


@dataclass(frozen=True)
class Case:
    """`env`: variables over the test's own ({base} {home} {project} {lnk_home} filled
    in; None removes one); `args`: lnk's before `--`; `shell`: run in the working
    directory before lnk starts (`cd` and `chmod` there); `says`: in the one message
    (125), or None for a run that must succeed; `user`, where the unprivileged user's
    outcome differs from root's (a folder root may write and the user may not)."""

    env: dict[str, str | None] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    says: str | None = None
    shell: str = ""
    setup: Callable[[Sandbox], None] = nothing
    user: str | None = None
    not_made: tuple[str, ...] = ()

    def expected(self, who_is_root: bool) -> str | None:
        return self.says if who_is_root or self.user is None else self.user


def _fifo(sandbox: Sandbox) -> None:
    os.mkfifo(sandbox.base / "fifo.toml")
    sandbox.chown(sandbox.base / "fifo.toml")


def _file(sandbox: Sandbox) -> None:
    (sandbox.base / "afile").write_text("")
    sandbox.chown(sandbox.base / "afile")


def _spec(text: bytes) -> Callable[[Sandbox], None]:
    def write(sandbox: Sandbox) -> None:
        (sandbox.base / "spec.toml").write_bytes(text)
        sandbox.chown(sandbox.base / "spec.toml")
    return write


def _unreadable(sandbox: Sandbox) -> None:
    path = sandbox.base / "spec.toml"
    path.write_text('[files]\nwrite = ["."]\n')
    path.chmod(0)  # root's: the user cannot read it


def _locked(sandbox: Sandbox) -> None:
    """A folder of root's that only root may write in."""
    (sandbox.base / "locked").mkdir(mode=0o555)


def _folder(mode: int) -> Callable[[Sandbox], None]:
    def make(sandbox: Sandbox) -> None:
        (sandbox.project / "odd").mkdir()
        sandbox.chown(sandbox.project / "odd")
        (sandbox.project / "odd").chmod(mode)
    return make


SPEC = "{base}/spec.toml"
CASES: dict[str, Case] = {
    # Odd, and still a home: the run goes on.
    "HOME=/": Case({"HOME": "/", "LNK_HOME": "{lnk_home}"}),
    "HOME=//": Case({"HOME": "//", "LNK_HOME": "{lnk_home}"}),
    "HOME with slashes": Case({"HOME": "{home}//"}),
    "PATH of // and a long folder": Case({"PATH": f"//usr/bin:{LONG}:/bin"}),
    "XDG_RUNTIME_DIR relative": Case({"XDG_RUNTIME_DIR": "run/user"}),
    "XDG_RUNTIME_DIR /proc/self": Case({"XDG_RUNTIME_DIR": "/proc/self"}),
    "a spec with a byte order mark": Case(args=("--spec", SPEC, "--yes"),
                                         setup=_spec(b'\xef\xbb\xbf[files]\nwrite = ["."]\n')),
    # $HOME.
    "HOME relative": Case({"HOME": "rel"}, says="HOME='rel' is not an absolute path",
                          not_made=("{project}/rel",)),
    "HOME missing": Case({"HOME": "{base}/gone"}, says="the home folder {base}/gone ($HOME) "
                         "does not exist", not_made=("{base}/gone",)),
    "HOME long and missing": Case({"HOME": LONG}, says=f"the home folder {LONG} ($HOME) does "
                                  "not exist", not_made=("/lnk-hostile",)),
    "HOME a file": Case({"HOME": "/etc/passwd"}, says="/etc/passwd is not a folder"),
    "HOME in /proc": Case({"HOME": "/proc"}, says="cannot make /proc/.lnk: the folder above "
                          "it is gone, or its file system (as /proc's) makes none"),
    "HOME where only root may write": Case({"HOME": "{base}/locked"}, setup=_locked,
                                           user="cannot make {base}/locked/.lnk: this "
                                           "user may not write there"),
    # $LNK_HOME.
    "LNK_HOME relative": Case({"LNK_HOME": "rel/lnk"}, says="LNK_HOME='rel/lnk' is not an "
                              "absolute path", not_made=("{project}/rel",)),
    "LNK_HOME in a missing folder": Case({"LNK_HOME": "{base}/nope/lnk"}),  # named: made
    "LNK_HOME in a missing home": Case(
        {"HOME": "{base}/gone", "LNK_HOME": "{base}/gone/x/lnk"}, says="the home folder "
        "{base}/gone ($HOME) does not exist", not_made=("{base}/gone",)),
    "LNK_HOME too long": Case({"LNK_HOME": TOO_LONG}, says="LNK_HOME is longer than a path "
                              "of this system may be (4095 bytes, 255 a name)",
                              not_made=("/lnk-hostile",)),
    "LNK_HOME with a name too long": Case(
        {"LNK_HOME": "{base}/a/" + "n" * 256 + "/lnk"}, says="LNK_HOME is longer than",
        not_made=("{base}/a",)),
    "LNK_HOME a file": Case({"LNK_HOME": "{base}/afile"}, setup=_file,
                            says="cannot open {base}/afile: Not a directory"),
    "LNK_HOME a device": Case({"LNK_HOME": "/dev/null"}, says="/dev/null"),
    "LNK_HOME in /proc": Case({"LNK_HOME": "/proc/lnk"}, says="cannot make /proc/lnk"),
    "LNK_HOME where only root may write": Case(
        {"LNK_HOME": "{base}/locked/lnk"}, setup=_locked,
        user="cannot make {base}/locked/lnk: this user may not write there"),
    # The working directory.
    "the working directory removed": Case(shell="mkdir gone && cd gone && rmdir ../gone",
                                          says="the working directory is gone"),
    "the working directory of mode 000": Case(
        setup=_folder(0o755), shell="cd odd && chmod 000 .", says="the working directory "
        "{project}/odd cannot be entered by the sandbox's user"),
    "the working directory not writable": Case(
        setup=_folder(0o555), shell="cd odd",  # root writes it; inside, the bits decide
        user="'.' resolves to {project}/odd, which this user"),
    # --spec.
    "a FIFO as the spec": Case(args=("--spec", "{base}/fifo.toml"), setup=_fifo,
                               says="cannot read the spec: it is not a regular file (a FIFO)"),
    "a device as the spec": Case(args=("--spec", "/dev/zero"),
                                 says="it is not a regular file (a device)"),
    "a folder as the spec": Case(args=("--spec", "{base}"),
                                 says="it is not a regular file (a folder)"),
    "a missing spec": Case(args=("--spec", "{base}/absent.toml"),
                           says="{base}/absent.toml: cannot read the spec: No such file"),
    "a spec named by nothing": Case(args=("--spec", ""), says="--spec names no file"),
    "an unreadable spec": Case(args=("--spec", SPEC, "--yes"), setup=_unreadable,
                               user="cannot read the spec: Permission denied"),
    "limits past the README's bounds": Case(
        args=("--spec", SPEC, "--yes"), setup=_spec(b'[files]\nwrite = ["."]\n[limits]\n'
                                                    b'tmp = "100T"\n'),
        says="{base}/spec.toml:4: key limits.tmp: '100T' is above the most it may be: half "
        "of the run's memory by default here"),
    "files = 0": Case(args=("--spec", SPEC, "--yes"), setup=_spec(
        b'[files]\nwrite = ["."]\n[limits]\nfiles = 0\n'), says="key limits.files: 0 is below "
        "the least that still lets a program start (16)"),
    # --report and --timeout.
    "a FIFO as the report": Case(args=("--report", "{base}/fifo.toml"), setup=_fifo,
                                 says="cannot write the report to {base}/fifo.toml"),
    "a folder as the report": Case(args=("--report", "{base}"), says="it is a folder"),
    "a device as the report": Case(args=("--report", "/dev/null"),
                                   says="/dev/null: it is not a regular file"),
    "a report in a missing folder": Case(args=("--report", "{base}/nope/r.jsonl"),
                                         says="{base}/nope cannot be opened"),
    "a report named by nothing": Case(args=("--report", ""), says="--report names no file"),
    "a timeout below 0": Case(args=("--timeout", "-1"), says="--timeout: -1: a timeout must be "
                              "more than 0 seconds"),
    "a timeout of nan": Case(args=("--timeout", "nan"), says="a timeout must be more than 0"),
}


def _filled(text: str, sandbox: Sandbox) -> str:
    return text.format(base=sandbox.base, home=sandbox.home, project=sandbox.project,
                       lnk_home=sandbox.lnk_home)


def _listing(sandbox: Sandbox, folder: Path, env: dict[str, str]) -> set[str]:
    """Every name below `folder` (where a placeholder would be), but in `odd`, whose
    mode the case chose, and the placeholders that linger for the next run (empty,
    dot-named, held by no live run: Sandbox.lingers)."""
    lnk_home = env.get("LNK_HOME") or os.path.join(env.get("HOME", "/"), ".lnk")
    stay = sandbox.lingering(Path(lnk_home)) if os.path.isabs(lnk_home) else set()
    found: set[str] = set()
    for top, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if name != "odd"]
        found.update(os.path.relpath(os.path.join(top, name), folder)
                     for name in folders + files
                     if not sandbox.lingers(Path(top, name), stay))
    return found


def attempt(sandbox: Sandbox, case: Case, *, streams: str = ""
            ) -> tuple[int, str, str]:
    """`lnk sandbox run ... -- /bin/sh -c 'echo RAN'` as the case says, from a shell
    (which does the case's `cd`); the status, stdout and stderr; then what it left."""
    marker = f"lnk-hostile-{secrets.token_hex(6)}"
    env = sandbox.env()
    for name, value in case.env.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = _filled(value, sandbox)
    args = [_filled(a, sandbox) for a in case.args]
    lnk = shlex.join([LNK, "sandbox", "run", *args, "--", "/bin/sh", "-c",
                      f"echo RAN # {marker}"])
    before = _listing(sandbox, sandbox.project, env)
    process = subprocess.Popen(
        [*sandbox.who.prefix, "/bin/sh", "-c",
         f"{case.shell + ' && ' if case.shell else ''}exec {lnk} {streams}"],
        cwd=sandbox.project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        out, err = process.communicate(timeout=60)  # a FIFO's open would never return
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # The keeper is never waited for (keeper.close: the status is not held up by it), so
    # it may still be exiting as lnk's status arrives: given a few seconds to go.
    left = wait_gone({pid for pid, line in command_lines().items() if marker.encode() in line
                      or (b"/keeper.py\0" in line and line.split(b"\0")[-2].startswith(
                          f"{process.pid}-".encode()))})
    assert not left, f"processes left by the run: {left}"
    assert _listing(sandbox, sandbox.project, env) == before, \
        "the run left something in its folder"
    return process.returncode, out, err


def one_message(status: int, out: str, err: str) -> str:
    """The one `lnk-sandbox:` line of a refusal, after its status and its form."""
    assert status == 125, (status, out, err)
    assert "Traceback" not in err and "RAN" not in out, err
    lines = err.splitlines()
    assert lines and lines[0].startswith("lnk-sandbox: "), err
    assert all(line.startswith("  hint: ") for line in lines[1:]), err
    return lines[0]


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_environment_runs_or_is_refused_with_its_cause(sandbox: Sandbox,
                                                                name: str) -> None:
    case = CASES[name]
    case.setup(sandbox)
    status, out, err = attempt(sandbox, case)
    says = case.expected(sandbox.who.is_root)
    if says is None:
        assert (status, out, "Traceback" in err) == (0, "RAN\n", False), err
    else:
        message = one_message(status, out, err)
        assert _filled(says, sandbox) in message, message
    for path in case.not_made:
        assert not os.path.lexists(_filled(path, sandbox)), f"{path} was made"


def test_enough_cases_of_each_kind() -> None:
    """The family covers each source: home, settings, working directory, spec, report."""
    kinds = {"HOME": 0, "LNK_HOME": 0, "working directory": 0, "spec": 0, "report": 0}
    for name in CASES:
        for kind in kinds:
            kinds[kind] += kind in name
    assert min(kinds.values()) >= 3, kinds


@pytest.mark.parametrize("streams", ["0<&-", "1>&-", "2>&-", "0<&- 1>&- 2>&-"])
def test_closed_standard_streams_neither_fail_a_run_nor_take_a_file(
        sandbox: Sandbox, streams: str) -> None:
    """A harness may start lnk with a standard stream closed: the next file lnk opened
    took its number (a folder there stopped the keeper's Python at start, and a notice
    would be written into whatever file held 2). Each is /dev/null to lnk and its
    children, and a refusal is still 125."""
    status, out, err = attempt(sandbox, Case(), streams=streams)
    assert status == 0, err
    assert out == ("" if "1>&-" in streams else "RAN\n")
    assert "Traceback" not in err and "Fatal Python error" not in err, err
    bad = Case(args=("--spec", "{base}/absent.toml"))
    assert attempt(sandbox, bad, streams=streams)[0] == 125


@pytest.mark.requires_root  # to mount the read-only file system
def test_settings_and_a_report_on_a_read_only_file_system(sandbox: Sandbox,
                                                          tmp_path: Path) -> None:
    """EROFS where the settings or the report would be made: 125 with the cause."""
    readonly = sandbox.base / "readonly"
    readonly.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,mode=0777", "lnk-hostile", str(readonly)],
                   check=True)
    try:
        message = one_message(*attempt(sandbox, Case({"LNK_HOME": "{base}/readonly/lnk"})))
        assert message == (f"lnk-sandbox: cannot make {readonly}/lnk: the file system there "
                           "is read-only")
        message = one_message(*attempt(sandbox, Case(args=("--report",
                                                           "{base}/readonly/r.jsonl"))))
        assert message == (f"lnk-sandbox: cannot write the report to {readonly}/r.jsonl: "
                           f"{readonly}/r.jsonl: Read-only file system")
    finally:
        subprocess.run(["umount", str(readonly)], check=True)
    assert stat.S_ISDIR(readonly.stat().st_mode) and not any(readonly.iterdir())
