"""A spec given as data (the Python API's dict) is validated by the same code as a file,
with the same errors: every case the file tests refuse is refused here, at the same key,
with the same message, and no line (there is no text); a good one gives the same Spec."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from supervisor.errors import SpecError
from supervisor.spec import Spec, parse_spec, parse_spec_data

from . import test_spec as file_tests

_MARKED: Any = file_tests.test_bad_spec_names_key_and_line  # pytest gave it .pytestmark
BAD_FILES: list[Any] = next(mark for mark in _MARKED.pytestmark
                            if mark.name == "parametrize").args[1]


def without_lines(spec: Spec) -> Spec:
    files = spec.files._replace(**{
        key: tuple(g._replace(line=None) for g in getattr(spec.files, key))
        for key in ("read", "write", "hide")})
    return spec._replace(source="-", files=files,
                         commands=spec.commands._replace(line=None))


@pytest.mark.parametrize(("text", "key", "line", "message"), BAD_FILES)
def test_data_is_refused_as_the_file_is(text: str, key: str, line: int, message: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec_data(tomllib.loads(text), "<dict>")
    error = refused.value
    assert (error.file, error.key, error.line, error.message) == ("<dict>", key, None, message)
    assert error.render().startswith(f"<dict>: key {key}: {message}")


def test_good_data_is_the_files_spec() -> None:
    text = ('agent = "a"\n[files]\nread = ["~/d", { path = "/srv", optional = true }]\n'
            'write = ["."]\nhide = ["~/d/x"]\nwrite_dot_files = ["."]\n'
            '[commands]\nprograms = ["git"]\n[network]\nmode = "proxy"\n'
            'allow = ["pypi.org"]\n[env]\nkeep = ["PATH"]\nset = { A = "1" }\n')
    from_file = parse_spec(text.encode(), "spec.toml")
    from_data = parse_spec_data(tomllib.loads(text), "<dict>")
    assert without_lines(from_file) == without_lines(from_data)
    assert from_data.files.read[0].line is None


def test_data_that_is_no_table_is_refused() -> None:
    with pytest.raises(SpecError, match="must be a table"):
        parse_spec_data(["files"], "<dict>")
