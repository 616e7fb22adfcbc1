"""Files a listed program runs in its place on macOS, found outside the sandbox at launch.

`[commands]` allows files, and Seatbelt checks each file executed. On a Mac several
everyday programs are stubs that execute another file, which a list naming only the
stub refuses (docs/macos.md has the sources):
- /usr/bin/git, make, python3, clang, cc, swift and the rest are xcrun stubs: each loads
  libxcrun from the developer folder xcode-select names and executes the tool there
  (/Library/Developer/CommandLineTools/usr/bin/git, or Xcode's). A stub links
  /usr/lib/libxcselect.dylib, which is how one is known here.
- /bin/sh executes the shell /private/var/select/sh names (bash, unless changed).
- A framework build's python (python.org's, Homebrew's, the Command Line Tools') executes
  Resources/Python.app/Contents/MacOS/Python of its framework (CPython's
  Mac/Tools/pythonw.c).
So at launch, outside the sandbox, each listed program's stand-ins are looked up
(`xcrun --find`, the link, the framework's layout) and allowed with it, and `plan` and
the run's notes name each. A stub whose tool cannot be found is left as it is: it fails
inside as it would outside. What the tool then runs (git's helpers in libexec/git-core)
is not added: that is the list's business, as on Linux; `learn` finds it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..grants import Program

XCRUN = "/usr/bin/xcrun"
BIN_SH = "/bin/sh"
SELECT_SH = "/private/var/select/sh"
# Where xcode-select keeps its choice: the first on recent macOS (claude-code#87520
# quotes /var/select/developer_dir), the second before [U: which release moved it].
DEVELOPER_LINKS = ("/private/var/select/developer_dir", "/private/var/db/xcode_select_link")
STUB_MARK = b"/usr/lib/libxcselect.dylib"
PYTHON_APP = "Resources/Python.app/Contents/MacOS/Python"
_FRAMEWORK_BIN = re.compile(r"^(?P<version>/.+\.framework/Versions/[^/]+)/bin/[^/]+$")
_STUB_READ_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class Companion:
    """A file a listed program runs in its place, allowed with it: `program` is its index
    in `[commands]`, `why` says how (an xcrun stub, /bin/sh's selected shell, ...)."""

    program: int
    path: str
    why: str


@dataclass(frozen=True)
class Toolchain:
    """Where the files that say what a stub runs are. Other paths are for tests alone."""

    xcrun: str = XCRUN
    bin_sh: str = BIN_SH
    select_sh: str = SELECT_SH
    developer_links: tuple[str, ...] = DEVELOPER_LINKS
    timeout: float = 10.0

    def is_stub(self, path: str) -> bool:
        """Whether `path` is an xcrun stub: a small program linking libxcselect."""
        try:
            with open(path, "rb") as handle:
                data = handle.read(_STUB_READ_LIMIT)
        except OSError:
            return False
        return STUB_MARK in data

    def find(self, name: str, env: Mapping[str, str]) -> str | None:
        """The tool an xcrun stub named `name` runs: `xcrun --find NAME`, run here with
        the developer folder the sandbox's environment names, if any."""
        run_env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
        if "DEVELOPER_DIR" in env:
            run_env["DEVELOPER_DIR"] = env["DEVELOPER_DIR"]
        try:
            done = subprocess.run([self.xcrun, "--find", name], env=run_env,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=self.timeout, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        found = done.stdout.decode("utf-8", "replace").strip()
        if done.returncode != 0 or not found.startswith("/") or "\n" in found:
            return None
        found = os.path.realpath(found)
        return found if os.path.isfile(found) else None

    def developer_dir(self, env: Mapping[str, str]) -> str | None:
        """The developer folder the stubs load libxcrun from: DEVELOPER_DIR when the
        sandbox's environment has it, else the link xcode-select keeps."""
        chosen = env.get("DEVELOPER_DIR")
        if not chosen:
            for link in self.developer_links:
                try:
                    chosen = os.readlink(link)
                except OSError:
                    continue
                break
        if not chosen or not chosen.startswith("/"):
            return None
        resolved = os.path.realpath(chosen)
        return resolved if os.path.isdir(resolved) else None

    def selected_shell(self) -> str | None:
        """The shell /bin/sh runs: what /private/var/select/sh names."""
        try:
            os.readlink(self.select_sh)
        except OSError:
            return None
        resolved = os.path.realpath(self.select_sh)
        return resolved if os.path.isfile(resolved) else None


def framework_python(path: str) -> str | None:
    """The Python.app a framework build's bin/pythonX runs, when `path` is one."""
    match = _FRAMEWORK_BIN.match(path)
    if match is None:
        return None
    app = os.path.join(match["version"], PYTHON_APP)
    return app if app != path and os.path.isfile(app) else None


def runs_instead(target: str, toolchain: Toolchain,
                 env: Mapping[str, str]) -> list[tuple[str, str]]:
    """What executing `target` executes in its place: (file, why), in order."""
    found: list[tuple[str, str]] = []
    if toolchain.is_stub(target):
        tool = toolchain.find(os.path.basename(target), env)
        if tool is not None and tool != target:
            found.append((tool, f"{target} is an xcrun stub"))
            app = framework_python(tool)
            if app is not None:
                found.append((app, f"{tool} is a framework build's python"))
    if target == toolchain.bin_sh:
        shell = toolchain.selected_shell()
        if shell is not None and shell != target:
            found.append((shell, f"/bin/sh runs the shell {toolchain.select_sh} names"))
    app = framework_python(target)
    if app is not None:
        found.append((app, "a framework build's python runs its Python.app"))
    return found


def companions(programs: Sequence[Program], toolchain: Toolchain,
               env: Mapping[str, str]) -> tuple[Companion, ...]:
    """Each listed program's stand-ins, in the list's order."""
    return tuple(Companion(i, path, why) for i, program in enumerate(programs)
                 for path, why in runs_instead(program.target, toolchain, env))
