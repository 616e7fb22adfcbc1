"""Builds the exec watch's compiled hot path (cffi, API mode) when a C compiler is there.

Everything else is in pyproject.toml. Without a compiler the build of the extension is
skipped and lnk-sandbox uses its pure-Python exec watch (slower per exec; `lnk sandbox
check` says which one runs).
"""

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as err:  # any compiler failure: fall back to the Python watch
            print(f"lnk-sandbox: the compiled exec watch was not built ({err}); "
                  "the pure-Python watch will be used")

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as err:
            print(f"lnk-sandbox: {ext.name} was not built ({err})")


setup(
    cffi_modules=["supervisor/linux/_watch_build.py:ffibuilder"],
    cmdclass={"build_ext": OptionalBuildExt},
)
