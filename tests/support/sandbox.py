"""Running lnk-sandbox the way a person does, as root or as the unprivileged test user.

`Sandbox` gives each test a folder of its own, owned by the user the test runs as, with
a project (the working directory), a home folder and `$LNK_HOME` inside that home.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import capabilities as caps

SUPPORT = Path(__file__).resolve().parent
PROBE_SOURCE = (SUPPORT / "probe.py").read_text()
LNK = str(caps.VENV_BIN / "lnk")
PYTHON_INSIDE = "/usr/bin/python3"


@dataclass(frozen=True)
class Who:
    """Whom lnk runs as: `prefix` runs a command as them; `uid`/`gid` own their files."""

    name: str
    uid: int
    gid: int
    prefix: tuple[str, ...] = ()

    @staticmethod
    def root() -> Who:
        return Who("root", 0, 0)

    @staticmethod
    def current() -> Who:
        return Who("user", os.getuid(), os.getgid())

    @staticmethod
    def test_user() -> Who:
        uid, gid = caps.user_ids()
        return Who("user", uid, gid, tuple(caps.as_test_user()))

    @property
    def is_root(self) -> bool:
        return self.uid == 0


@dataclass
class ProbeResult:
    code: int
    stdout: str
    stderr: str
    started: bool = field(init=False)

    def __post_init__(self) -> None:
        self.started = any(line.startswith("STARTED ") for line in self.stdout.splitlines())

    def expect(self, code: int) -> ProbeResult:
        """Assert the probe ran inside and ended with `code` (0 or an errno)."""
        assert self.started, f"the probe never started inside:\n{self.stderr}\n{self.stdout}"
        name = errno.errorcode.get(code, str(code))
        got = errno.errorcode.get(self.code, str(self.code))
        assert self.code == code, (
            f"expected {name}, got {got} (exit {self.code})\nstdout:\n{self.stdout}\n"
            f"stderr:\n{self.stderr}")
        return self


@dataclass
class Sandbox:
    who: Who
    base: Path
    project: Path
    home: Path
    lnk_home: Path

    @staticmethod
    def create(who: Who, tmp_path: Path, *, under: str = "/tmp") -> Sandbox:
        """`under`: where its folder is made; a home outside /tmp, where a person's is,
        for what Landlock holds there (inside a sandbox /tmp is a fresh folder of its own,
        its rights beneath everything mounted in it)."""
        base = Path(tempfile.mkdtemp(prefix="lnk-test-", dir=under))
        base.chmod(0o755)
        project, home = base / "project", base / "home"
        project.mkdir()
        home.mkdir()
        box = Sandbox(who, base, project, home, home / ".lnk")
        box.chown()
        return box

    def chown(self, path: Path | None = None) -> None:
        """Give the files under `path` (the whole folder by default) to the test's user."""
        if os.geteuid() != 0 or self.who.is_root:
            return
        top = path or self.base
        os.lchown(top, self.who.uid, self.who.gid)
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                os.lchown(os.path.join(root, name), self.who.uid, self.who.gid)

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def lingering(self, lnk_home: Path | None = None) -> set[Path]:
        """The placeholders left after the runs that held them, for the next run to join
        (supervisor/linux/placeholders.py: LINGER_SECONDS), as the state lists them:
        each held by nothing but `~DEADLINE`s. `lnk_home`: another than the sandbox's
        (a run given LNK_HOME or HOME of its own)."""
        state = (lnk_home or self.lnk_home) / "placeholders"
        found: set[Path] = set()
        try:
            data = state.read_bytes()
        except OSError:  # none (or a path no state could have: too long, not a folder)
            return found
        for line in data.split(b"\n")[1:]:
            parts = line.split(b" ", 4)
            if len(parts) == 5 and parts[3] != b"-" and all(
                    h.startswith(b"~") for h in parts[3].split(b",")):
                found.add(Path(os.fsdecode(parts[4])))  # no test path needs unescaping
        return found

    def listing(self, folder: Path | None = None) -> list[str]:
        """The names in `folder` (the project by default) but the lingering
        placeholders: what the person sees once they went (each checked by `lingers`)."""
        folder = folder or self.project
        stay = self.lingering()
        return [p.name for p in sorted(folder.iterdir()) if not self.lingers(p, stay)]

    def tree(self, folder: Path | None = None) -> list[str]:
        """Every path below `folder` (the project by default), relative, but those in a
        .git and the lingering placeholders."""
        folder = folder or self.project
        stay = self.lingering()
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                      if ".git" not in p.parts and not self.lingers(p, stay))

    def lingers(self, path: Path, stay: set[Path]) -> bool:
        """Whether `path` is (or is in) a lingering placeholder: a folder holding
        nothing but other lingering ones, whose name at its written folder's top has a
        dot (anything else there fails the test)."""
        found = next((p for p in (path, *path.parents) if p in stay), None)
        if found is None:
            return False

        def only_lingering(folder: Path) -> bool:
            return folder.is_dir() and not folder.is_symlink() and all(
                inner in stay and only_lingering(inner) for inner in folder.iterdir())

        assert only_lingering(found), f"{found} lingers but is not empty"
        top = next((p for p in (found, *found.parents) if p.name.startswith(".")), None)
        assert top is not None, f"{found} lingers under no name with a dot"
        return True

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        if os.environ.get("PYTHONPATH"):
            # A worktree's tests run its own code: lnk is the shared venv's, which would
            # import the main checkout's otherwise.
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        if os.environ.get("LNK_INNER"):
            env["LNK_INNER"] = os.environ["LNK_INNER"]  # the `inner` fixture's choice
        if os.environ.get("LNK_START_SERVER"):
            # The start server (opt-in): the suite run with it on, as a person who set it.
            env["LNK_START_SERVER"] = os.environ["LNK_START_SERVER"]
        env.update(extra or {})
        return env

    def write_spec(self, text: str, name: str = "spec.toml") -> Path:
        path = self.base / name
        path.write_text(text)
        self.chown(path)
        return path

    def lnk(
        self,
        *args: str,
        spec: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        landlock: bool = True,
        memfd_seal: bool = True,
        other_listener: bool = False,
        yes: bool = True,
        timeout: float = 60,
        input: str | None = None,
        wrapper: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Run `lnk sandbox ARGS...` as the test's user; `spec` is TOML text, allowed
        with --yes unless `yes` is False. `landlock=False` and `memfd_seal=False` run it as
        on a kernel without Landlock, or without MFD_NOEXEC_SEAL (before Linux 6.3).
        `wrapper` runs first, as the test's own user (a person's shell around the run)."""
        command = [LNK, "sandbox", args[0]]
        if spec is not None:
            command += ["--spec", str(self.write_spec(spec))]
            if yes and args[0] in ("run", "learn", "wrap"):
                command.append("--yes")  # asking is tested on its own (test_consent.py)
        command += list(args[1:])
        if not landlock:
            command = [sys.executable, str(SUPPORT / "no_landlock.py"), *command]
        if not memfd_seal:
            command = [sys.executable, str(SUPPORT / "no_memfd_seal.py"), *command]
        if other_listener:
            command = [sys.executable, str(SUPPORT / "other_listener.py"), *command]
        return subprocess.run(
            [*wrapper, *self.who.prefix, *command],
            cwd=cwd or self.working_directory(spec),
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )

    def working_directory(self, spec: str | None) -> Path:
        """Where lnk starts by default: the project, unless `spec` (TOML text) grants
        no folder holding it; then `/`, which is where such a command always started
        inside (a run from a folder the sandbox would not see is refused)."""
        if spec is None:
            return self.project
        try:
            files = tomllib.loads(spec).get("files", {})
            names = [entry["path"] if isinstance(entry, dict) else str(entry)
                     for entry in [*files.get("read", []), *files.get("write", [])]]
        except (tomllib.TOMLDecodeError, AttributeError, KeyError, TypeError):
            return self.project  # a spec refused before any run: where it is run is moot
        for name in names:
            if name.startswith("."):
                return self.project  # a name relative to the working directory
            path = (str(self.home) + name[1:] if name.startswith("~")
                    else str(self.project) + name[1:] if name.startswith(".") else name)
            path = os.path.normpath(path)
            if str(self.project) == path or str(self.project).startswith(path.rstrip("/") + "/"):
                return self.project
        return Path("/")

    def run(self, *command: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        """`lnk sandbox run -- COMMAND...`."""
        return self.lnk("run", "--", *command, **kwargs)  # type: ignore[arg-type]

    def probe(self, *args: str, **kwargs: object) -> ProbeResult:
        """Run the probe inside with one action; see support/probe.py."""
        done = self.run(PYTHON_INSIDE, "-c", PROBE_SOURCE, *args, **kwargs)
        return ProbeResult(done.returncode, done.stdout, done.stderr)
