"""Test tiers, capability markers and the two ways a person runs lnk-sandbox.

Markers (each probes the real thing, once per session):
- requires_bwrap: bubblewrap with --bind-fd is installed;
- requires_userns: the unprivileged test user can make a user namespace;
- requires_landlock(abi=N): the kernel offers Landlock at ABI N or newer;
- requires_seccomp_notify: seccomp user notification works here;
- requires_root: the tests run as root;
- requires_git: git is installed (the tests compare what lnk reads with git's own answer);
- requires_person_tools: hg and Debian's less with lesspipe are installed (the person's
  tools an attack's payload would run in, run outside after it);
- requires_memfd_noexec_seal: memfd_create takes MFD_NOEXEC_SEAL (and MFD_EXEC), so the
  exec watch can make sealed memory files (without it they are refused under a list);
- requires_docker: Docker's daemon answers, started here if it was not running (Debian's
  docker.io; support/container.py), and debootstrap can make the container's image.

`kernel_matrix` marks the tests whose outcome depends on the kernel's features (seccomp,
Landlock's ABI, memory files, the exec watch, namespaces): ci/kernels.sh runs them under
each kernel Debian's packages offer. It gates nothing.

A test skips with the reason only where the machine truly lacks the capability. Under
CI (`CI=true`) or `LNK_MUST_RUN=1`, such a skip fails instead: CI's machine has them all,
and an enforcement test that silently skipped would prove nothing (bubblewrap's
BWRAP_MUST_WORK).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import capabilities as caps
from support import container
from support.capabilities import missing
from support.sandbox import Sandbox, Who


def pytest_runtest_setup(item: pytest.Item) -> None:
    probes = {
        "requires_bwrap": caps.bwrap_problem,
        "requires_userns": caps.userns_problem,
        "requires_seccomp_notify": caps.notify_problem,
        "requires_memfd_noexec_seal": caps.memfd_noexec_seal_problem,
        "requires_git": caps.git_problem,
        "requires_person_tools": caps.person_tools_problem,
        "requires_docker": container.daemon_problem,
    }
    for marker in item.iter_markers():
        if marker.name in probes and (reason := probes[marker.name]()):
            missing(reason)
        elif marker.name == "requires_landlock":
            abi = int(marker.kwargs.get("abi", 1))
            if (found := caps.landlock_abi()) < abi:
                missing(f"Landlock ABI {abi} needed, the kernel offers {found or 'none'}")
        elif marker.name == "requires_root" and os.geteuid() != 0:
            pytest.skip("needs root (run the suite as root for root mode)")


@pytest.fixture(params=["root", "user"])
def who(request: pytest.FixtureRequest) -> Who:
    """Run as root (root mode) and as an unprivileged user the set-up creates."""
    if request.param == "root":
        if os.geteuid() != 0:
            pytest.skip("root mode needs the suite to run as root")
        return Who.root()
    if os.geteuid() != 0:
        return Who.current()
    reason = caps.test_user_problem()
    if reason:
        missing(reason)
    return Who.test_user()


@pytest.fixture(params=["landlock", "no-landlock"])
def landlock(request: pytest.FixtureRequest) -> bool:
    """With Landlock, and with its syscalls answering ENOSYS as a kernel without it."""
    if request.param == "landlock" and caps.landlock_abi() < 1:
        missing("the kernel has no Landlock")
    return str(request.param) == "landlock"


@pytest.fixture(params=["compiled", "python"])
def inner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each run with the compiled inner confiner, and with its Python fallback
    (LNK_INNER=python, which support.sandbox passes on to every lnk it starts)."""
    if request.param == "compiled":
        if (reason := caps.compiled_inner_problem()) is not None:
            missing(f"the compiled inner confiner cannot run: {reason}")
        monkeypatch.delenv("LNK_INNER", raising=False)
    else:
        monkeypatch.setenv("LNK_INNER", "python")
    return str(request.param)


@pytest.fixture
def root_sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox run by root: root mode."""
    if os.geteuid() != 0:
        pytest.skip("root mode needs the suite to run as root")
    box = Sandbox.create(Who.root(), tmp_path)
    yield box
    box.cleanup()


@pytest.fixture
def sandbox(who: Who, tmp_path: Path) -> Iterator[Sandbox]:
    """A project folder, a home and a $LNK_HOME owned by `who`, and a way to run lnk."""
    box = Sandbox.create(who, tmp_path)
    yield box
    box.cleanup()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the Docker daemon the container test started, if it did."""
    container.stop_daemon()
