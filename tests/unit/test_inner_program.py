"""Which inner confiner a run starts (linux/inner_program.py): the compiled one where it
can run from where it is, else its Python fallback, and always Python for a file
operation or when LNK_INNER=python asks. A noexec file system is judged by the kernel's
own mount flag in tests/integration/test_inner.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from supervisor.linux import inner_program
from supervisor.linux.inner_program import BINARY, choose, compiled_problem, described


def test_a_folder_without_the_program_has_it_not_built(tmp_path: Path) -> None:
    assert compiled_problem(str(tmp_path)) == (
        "it was not built (setup.py needs a C compiler and a static C library)")
    assert inner_program.compiled_path(str(tmp_path)) is None


def test_the_program_must_be_a_file_others_may_run(tmp_path: Path) -> None:
    (tmp_path / BINARY).mkdir()
    assert compiled_problem(str(tmp_path)) == f"{tmp_path / BINARY} is not a file"
    (tmp_path / BINARY).rmdir()
    shutil.copy("/bin/true", tmp_path / BINARY)
    (tmp_path / BINARY).chmod(0o750)
    if os.geteuid() == 0:  # the sandbox's own uid runs it: others must be able to
        assert compiled_problem(str(tmp_path)) == (
            f"{tmp_path / BINARY} is not executable by others (-rwxr-x---)")
    (tmp_path / BINARY).chmod(0o755)
    assert compiled_problem(str(tmp_path)) is None
    assert inner_program.compiled_path(str(tmp_path)) == str(tmp_path / BINARY)


def test_a_file_operation_and_the_switch_take_the_python_inner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inner_program, "inner_source", lambda: str(tmp_path))
    assert choose() == "python"  # nothing built here
    assert described() == ("python (the compiled inner cannot run: it was not built "
                           "(setup.py needs a C compiler and a static C library))")
    shutil.copy("/bin/true", tmp_path / BINARY)
    (tmp_path / BINARY).chmod(0o755)
    monkeypatch.delenv("LNK_INNER", raising=False)
    assert choose() == "compiled"
    assert choose(file_op=True) == "python"
    monkeypatch.setenv("LNK_INNER", "python")
    assert (choose(), described()) == ("python", "python (LNK_INNER=python)")
