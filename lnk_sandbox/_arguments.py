"""The Python API's arguments, checked before anything starts.

An argument of the wrong kind is a TypeError, one of the wrong value a ValueError, as
anywhere in Python: the spec is not at fault, so never a SpecError, and never a run
that quietly does something else (a string taken for a list of words runs its first
letter). Each message names the argument and says what it takes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from supervisor import errors


def words(argv: Sequence[str | os.PathLike[str]]) -> list[str]:
    """`argv` as the words of a command, each a string.

    One string is refused rather than split: `run("echo hi")` would run a program named
    `e`, and splitting it on blanks (shlex) would be a shell that is not one (no pipes,
    no `$VAR`, no globs). A shell command is said as what it is, `["sh", "-c", ...]`.
    """
    if isinstance(argv, str | bytes | bytearray):
        shown = argv if len(argv) <= 40 else argv[:37] + ("..." if isinstance(argv, str)
                                                          else b"...")
        raise TypeError(f"argv is a list of words, not one {type(argv).__name__}: to run "
                        f"a shell command, pass ['sh', '-c', {shown!r}]; to run one "
                        f"program, [{shown!r}]")
    try:
        found = [os.fspath(word) for word in argv]
    except TypeError:
        raise TypeError("argv is a list of strings (or paths), as in ['make', 'test']"
                        ) from None
    for index, word in enumerate(found):
        if not isinstance(word, str):
            raise TypeError(f"argv[{index}] is {type(word).__name__}, not a string: "
                            "decode it (os.fsdecode)")
        if "\x00" in word:
            raise ValueError(f"argv[{index}] holds a NUL character, which no program's "
                             "argument can")
    if not found:
        raise ValueError("argv is empty: no command given")
    return found


def variables(env: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """A call's variables, refused as a spec's `[env] set` would refuse them (a loader
    variable, a name that is not one), but as the argument's fault: ValueError."""
    if not env:
        return ()
    if not isinstance(env, Mapping):
        raise TypeError(f"env is a mapping of names to strings, not "
                        f"{type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"env is a mapping of names to strings: {name!r}: {value!r}")
    from supervisor.spec import parse_spec_data

    try:
        return parse_spec_data({"env": {"set": dict(env)}}, "<env>").env.assign
    except errors.SpecError as err:
        name = (err.key or "").removeprefix("env.set.")
        said = f"env[{name!r}]: {err.message}" if name else f"env: {err.message}"
        raise ValueError(said + (f" ({err.hint})" if err.hint else "")) from None


def size(value: int | None, name: str) -> int | None:
    """A byte count (`output_limit`, `limit`): None, or a whole number from 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is a number of bytes (an int), or None, not "
                        f"{type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} {value}: a number of bytes is 0 or more")
    return value


def data(value: Any, name: str, *, none: bool = True) -> bytes | None:
    """`stdin` or a file's content: bytes (or a bytes-like object), text as UTF-8."""
    if value is None and none:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{name} is bytes or str{', or None' if none else ''}, not "
                    f"{type(value).__name__}")


def path(value: Any, name: str = "path") -> str:
    """A path inside the sandbox, as a string."""
    found = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(found, str):
        raise TypeError(f"{name} is a str (or a path), not {type(value).__name__}")
    if not found or "\x00" in found:
        raise ValueError(f"{name} {found!r} names no file")
    return found


def decider(fd: int | None, timeout: float | None) -> None:
    """`decide_fd`: a descriptor open in this process; `decide_timeout`: seconds above
    0, and only with a descriptor."""
    if fd is not None:
        if isinstance(fd, bool) or not isinstance(fd, int):
            raise TypeError(f"decide_fd is a file descriptor (an int), not "
                            f"{type(fd).__name__}")
        try:
            os.fstat(fd)
        except OSError as err:
            raise ValueError(f"decide_fd {fd}: {err.strerror}: pass one end of a socket "
                             "whose other end the harness holds") from None
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise TypeError(f"decide_timeout is a number of seconds, not "
                            f"{type(timeout).__name__}")
        if not timeout > 0:
            raise ValueError(f"decide_timeout {timeout}: must be more than 0 seconds")
        if fd is None:
            raise ValueError("decide_timeout without decide_fd")
