"""The Python API's errors: importable from lnk_sandbox, whole in `str()` and in a
pickle, and an argument's mistake a TypeError or ValueError, never a SpecError."""

from __future__ import annotations

import pickle

import anyio
import pytest

import lnk_sandbox
from supervisor import errors

CLASSES = ("SandboxError", "SpecError", "LaunchError", "ConfinementError", "HelperError",
           "NotAllowedError")


def test_every_error_is_importable_from_lnk_sandbox_and_is_supervisors() -> None:
    for name in CLASSES:
        assert name in lnk_sandbox.__all__, name
        assert getattr(lnk_sandbox, name) is getattr(errors, name), name
        assert issubclass(getattr(lnk_sandbox, name), lnk_sandbox.SandboxError)


def test_str_of_a_spec_error_says_file_line_key_and_hint() -> None:
    """README: every error names the file, the key and the line, and says what to
    change; a harness that logs `str(err)` keeps all of it."""
    with pytest.raises(lnk_sandbox.SpecError) as caught:
        lnk_sandbox.spec_from_toml('[files]\nwrite = "."\n', name="spec.toml")
    error = caught.value
    assert (error.file, error.key, error.line) == ("spec.toml", "files.write", 2)
    assert str(error) == error.render() == (
        "spec.toml:2: key files.write: must be a list of paths, not a string\n"
        "  hint: write a list, even of one: write = [\".\"]")


@pytest.mark.parametrize("error", [
    errors.SandboxError("failed", hint="do this", errno=5),
    errors.SpecError("bad", file="s.toml", key="limits.tmp", line=4, hint="lower it"),
    errors.LaunchError("gone", hint="again", errno=2),
    errors.ConfinementError("no Landlock"),
    errors.HelperError("lost"),
    errors.NotAllowedError("not allowed", hint="--yes"),
])
def test_each_error_says_its_hint_in_str_and_pickles_whole(
        error: errors.SandboxError) -> None:
    assert str(error) == error.render()
    if error.hint:
        assert str(error).endswith(f"\n  hint: {error.hint}")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert again.__dict__ == error.__dict__
    assert str(again) == str(error) and again.args == error.args


@pytest.mark.parametrize("argv", ["echo hi", b"echo hi", bytearray(b"ls")])
def test_one_string_is_never_split_into_letters(argv: object) -> None:
    """Refused before a spec is read or anything starts: no process, no folder."""
    with pytest.raises(TypeError) as caught:
        anyio.run(lambda: lnk_sandbox.run(argv, spec="/nonexistent/spec.toml"))  # type: ignore[arg-type]
    assert "['sh', '-c'," in str(caught.value)
    with pytest.raises(TypeError):
        lnk_sandbox.run_sync(argv)  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "kind", "says"), [
    ({"timeout": -1}, ValueError, "timeout: -1: a timeout must be more than 0 seconds"),
    ({"timeout": float("nan")}, ValueError, "timeout: nan: a timeout must be more than 0"),
    ({"timeout": True}, TypeError, "timeout: True is not a number of seconds"),
    ({"decide_timeout": -2, "decide_fd": 0}, ValueError, "decide_timeout -2: must be more"),
    ({"decide_timeout": 5}, ValueError, "decide_timeout without decide_fd"),
    ({"decide_fd": "3"}, TypeError, "decide_fd is a file descriptor (an int)"),
])
def test_an_arguments_mistake_is_a_type_or_value_error(options: dict[str, object],
                                                      kind: type[Exception],
                                                      says: str) -> None:
    with pytest.raises(kind) as caught:
        lnk_sandbox.run_sync(["true"], spec="/nonexistent/spec.toml", **options)
    assert not isinstance(caught.value, errors.SandboxError)
    assert str(caught.value).startswith(says)
