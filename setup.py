"""Builds the compiled parts when a C compiler is there: the exec watch's hot path (cffi,
API mode) and the inner confiner (inner/confine.c, a static program).

Everything else is in pyproject.toml. Without a compiler each build is skipped, said,
and lnk-sandbox uses the Python one instead: the pure-Python exec watch (slower per
exec), the Python inner (slower per start). `lnk sandbox check` says which ones run.
"""

import hashlib
import os
import shlex
import shutil
import subprocess
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

CONFINER_SOURCE = os.path.join("inner", "confine.c")
CONFINER = os.path.join("inner", "confine")  # supervisor/linux/inner_program.py's BINARY
# C99 and the C library alone; static, so that it runs inside a sandbox that shows no C
# library and no loader, and starts without the loader's work.
CONFINER_FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-fstack-protector-strong",
                  "-D_FORTIFY_SOURCE=2", "-static"]


class OptionalBuildExt(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as err:  # any compiler failure: fall back to the Python watch
            print(f"lnk-sandbox: the compiled exec watch was not built ({err}); "
                  "the pure-Python watch will be used")
        self.build_confiner()

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as err:
            print(f"lnk-sandbox: {ext.name} was not built ({err})")

    def build_confiner(self) -> None:
        """inner/confine into the build's package folder (the wheel's), and into the
        source tree for an editable install (which runs the tree's `inner/`)."""
        compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC")
                               or "cc")
        target = os.path.join(self.build_lib, CONFINER)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(CONFINER_SOURCE, "rb") as source:
            digest = hashlib.sha256(source.read()).hexdigest()
        # The source's digest, in the program: a test finds a build older than its source.
        command = [*compiler, *CONFINER_FLAGS, f'-DLNK_SOURCE_SHA256="{digest}"', "-o",
                   target, CONFINER_SOURCE]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            why = (done.stderr.strip().splitlines() or ["?"])[-1] if done.returncode else ""
        except OSError as err:
            why = str(err)
        if why:
            print(f"lnk-sandbox: the compiled inner confiner was not built ({why}); the "
                  "Python inner will be used")
            return
        os.chmod(target, 0o755)
        if self.inplace or getattr(self, "editable_mode", False):
            shutil.copy2(target, CONFINER)

    def get_outputs(self) -> list[str]:
        built = os.path.join(self.build_lib, CONFINER)
        return [*super().get_outputs(), *([built] if os.path.exists(built) else [])]


setup(
    cffi_modules=["supervisor/linux/_watch_build.py:ffibuilder"],
    cmdclass={"build_ext": OptionalBuildExt},
)
