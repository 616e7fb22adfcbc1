"""Signals passed on to the sandbox's group: an end asked twice, or not met within the
grace, kills it; a group already gone starts no grace."""

from __future__ import annotations

import signal
import subprocess
import time

from supervisor.signal_forwarding import KILL_GRACE, SignalForwarding


def _ignoring_sigterm() -> subprocess.Popen[bytes]:
    """A group whose command outlives SIGTERM, as a program with its own handler may."""
    return subprocess.Popen(["sh", "-c", "trap '' TERM; echo up; exec sleep 30"],
                            stdout=subprocess.PIPE, start_new_session=True)


def test_a_second_sigterm_kills_and_the_grace_is_counted_from_the_last() -> None:
    process = _ignoring_sigterm()
    kills: list[float] = []
    try:
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        forwarding = SignalForwarding(process.pid, lambda: kills.append(time.monotonic()))
        assert forwarding.grace_left() is None
        forwarding.forward(signal.SIGTERM)
        assert process.poll() is None and kills == []
        left = forwarding.grace_left()
        assert left is not None and KILL_GRACE - 1 < left <= KILL_GRACE
        assert not forwarding.overdue()
        forwarding.forward(signal.SIGTERM)
        assert len(kills) == 1
    finally:
        process.kill()
        process.communicate()


def test_the_grace_running_out_kills_once() -> None:
    process = _ignoring_sigterm()
    kills: list[int] = []
    try:
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        forwarding = SignalForwarding(process.pid, lambda: kills.append(1))
        forwarding.forward(signal.SIGHUP)
        forwarding.kill_deadline = time.monotonic() - 1  # as if KILL_GRACE had passed
        assert forwarding.overdue() and kills == [1]
        assert not forwarding.overdue() and forwarding.grace_left() is None
    finally:
        process.kill()
        process.communicate()


def test_a_group_gone_starts_no_grace() -> None:
    process = subprocess.Popen(["true"], start_new_session=True)
    process.wait()
    forwarding = SignalForwarding(process.pid, lambda: None)
    forwarding.forward(signal.SIGTERM)
    assert forwarding.grace_left() is None


def test_install_and_restore_give_the_handlers_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    forwarding = SignalForwarding(0, lambda: None)
    forwarding.install()
    try:
        assert signal.getsignal(signal.SIGTERM) == forwarding._on_signal
    finally:
        forwarding.restore()
    assert signal.getsignal(signal.SIGTERM) == before


def test_after_signal_runs_once_the_forward_decided() -> None:
    process = _ignoring_sigterm()
    graces: list[float | None] = []
    try:
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        forwarding = SignalForwarding(process.pid, lambda: None,
                                      after_signal=lambda: graces.append(
                                          forwarding.grace_left()))
        forwarding.install()
        try:
            signal.raise_signal(signal.SIGTERM)
        finally:
            forwarding.restore()
        assert len(graces) == 1
        left = graces[0]
        assert left is not None and KILL_GRACE - 1 < left <= KILL_GRACE
        assert process.poll() is None  # the forward reached the group, which ignored it
    finally:
        process.kill()
        process.communicate()


def test_after_signal_runs_when_the_group_is_gone() -> None:
    process = subprocess.Popen(["true"], start_new_session=True)
    process.wait()
    calls: list[int] = []
    forwarding = SignalForwarding(process.pid, lambda: None,
                                  after_signal=lambda: calls.append(1))
    forwarding.install()
    try:
        signal.raise_signal(signal.SIGINT)
    finally:
        forwarding.restore()
    assert calls == [1] and forwarding.grace_left() is None
