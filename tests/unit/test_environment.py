"""The sandbox's environment: only what `[env]` keeps or sets, never a loader variable."""

from __future__ import annotations

import pytest

from supervisor.environment import (
    DEFAULT_KEEP,
    FALLBACK_PATH,
    LOADER_VARIABLES,
    build_environment,
    is_loader_variable,
)

CALLER = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "TERM": "xterm",
    "SECRET_TOKEN": "hunter2",
    "LD_PRELOAD": "/tmp/evil.so",
    "LD_LIBRARY_PATH": "/tmp",
    "GCONV_PATH": "/tmp/gconv",
    "TMPDIR": "/var/tmp",
}


@pytest.mark.parametrize(
    "name",
    [
        "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_DEBUG", "LD_DEBUG_OUTPUT",
        "LD_PROFILE", "LD_ORIGIN_PATH", "LD_SHOW_AUXV", "LD_BIND_NOW", "LD_", "GCONV_PATH",
        "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
        "MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
        "MALLOC_CHECK_",
    ],
)
def test_loader_variables(name: str) -> None:
    assert is_loader_variable(name)


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "TMPDIR", "TZ", "LANG", "ld_preload", "OLD_PRELOAD", "XLD_PRELOAD",
     "LDFLAGS", "LD", "PYTHONPATH"],
)
def test_not_loader_variables(name: str) -> None:
    assert not is_loader_variable(name)


def test_no_default_kept_variable_is_a_loader_variable() -> None:
    assert DEFAULT_KEEP == ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ")
    assert not any(is_loader_variable(n) for n in DEFAULT_KEEP)
    assert all(is_loader_variable(n) for n in LOADER_VARIABLES)


def test_only_kept_variables_pass() -> None:
    env = build_environment(CALLER, keep=DEFAULT_KEEP, assign=())
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "LANG": "C.UTF-8",
                   "TERM": "xterm"}


def test_loader_variables_never_pass_even_when_kept_or_set() -> None:
    env = build_environment(
        CALLER,
        keep=("HOME", "LD_PRELOAD", "GCONV_PATH", "TMPDIR"),
        assign=(("LD_AUDIT", "/tmp/a.so"), ("X", "1")),
        extra={"LD_LIBRARY_PATH": "/tmp", "HTTPS_PROXY": "http://127.0.0.1:3128"},
    )
    assert env == {"HOME": "/home/u", "TMPDIR": "/var/tmp", "X": "1",
                   "HTTPS_PROXY": "http://127.0.0.1:3128"}


def test_path_falls_back_when_kept_but_missing() -> None:
    assert build_environment({}, keep=("PATH", "HOME"), assign=()) == {"PATH": FALLBACK_PATH}
    assert FALLBACK_PATH == "/usr/local/bin:/usr/bin:/bin"


def test_path_not_kept_is_not_invented() -> None:
    assert build_environment(CALLER, keep=("HOME",), assign=()) == {"HOME": "/home/u"}


def test_empty_keep_gives_only_what_is_set() -> None:
    assert build_environment(CALLER, keep=(), assign=(("A", "1"),)) == {"A": "1"}


def test_precedence_set_over_extra_over_caller() -> None:
    env = build_environment(
        {"HTTP_PROXY": "caller", "NO_PROXY": "caller", "A": "caller"},
        keep=("HTTP_PROXY", "NO_PROXY", "A"),
        assign=(("NO_PROXY", "spec"),),
        extra={"HTTP_PROXY": "sandbox", "NO_PROXY": "sandbox"},
    )
    assert env == {"HTTP_PROXY": "sandbox", "NO_PROXY": "spec", "A": "caller"}


def test_set_keeps_empty_values_and_the_last_assignment() -> None:
    env = build_environment({}, keep=(), assign=(("A", ""), ("B", "1"), ("B", "2")))
    assert env == {"A": "", "B": "2"}


def test_the_caller_mapping_is_not_changed() -> None:
    caller = dict(CALLER)
    build_environment(caller, keep=DEFAULT_KEEP, assign=(("PATH", "/x"),))
    assert caller == CALLER


def test_dyld_variables_are_loader_variables_too() -> None:
    """macOS's loader reads DYLD_INSERT_LIBRARIES as Linux's reads LD_PRELOAD."""
    from supervisor.environment import build_environment, is_loader_variable

    assert is_loader_variable("DYLD_INSERT_LIBRARIES")
    assert is_loader_variable("DYLD_LIBRARY_PATH")
    env = build_environment({"DYLD_INSERT_LIBRARIES": "/x.dylib", "PATH": "/bin"},
                            keep=("PATH", "DYLD_INSERT_LIBRARIES"), assign=())
    assert env == {"PATH": "/bin"}
