"""What holds of a spec without namespaces (nonamespace.py), judged as plain data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from supervisor.caches import Cache
from supervisor.errors import SandboxError
from supervisor.grants import Grant
from supervisor.limits import Limits, resolve
from supervisor.netpolicy import NetworkRules, UnixSocket
from supervisor.nonamespace import PROMISES, Facts, forced_off, judge
from support.snapshots import a_snapshot

DOCS = Path(__file__).resolve().parents[2] / "docs" / "design.md"
WRITE = Grant(".", "/h/p", "write", "files.write[0]", "files.write[0]", 3)
HERE = Facts(landlock_abi=7, root=False)


def keys(judgement_facts: Facts = HERE, *grants: Grant, **rest: object) -> list[str]:
    snap = a_snapshot(*(grants or (WRITE,)), **rest)  # type: ignore[arg-type]
    return [r.key for r in judge(snap, judgement_facts).refused]


def test_the_default_spec_holds_narrower() -> None:
    judgement = judge(a_snapshot(WRITE), HERE)
    assert judgement.refused == ()
    assert judgement.narrower[0] == (
        "nothing new can be made at the top of . in this mode, nor removed or renamed "
        "there: its dot files are held without mounts; files.write_dot_files = [\".\"] "
        "opens it")
    assert any(line.startswith("pid isolation: other processes are seen in /proc")
               for line in judgement.lost)
    assert judgement.error("s.toml") is None


def test_write_dot_files_opens_the_top() -> None:
    judgement = judge(a_snapshot(WRITE._replace(dot_files_writable=True)), HERE)
    assert not any("at the top of" in line for line in judgement.narrower)


def test_each_promise_that_cannot_hold_refuses_the_launch_naming_its_key() -> None:
    cache = Cache("~/.cache/pip", "/h/.cache/pip", "/h/.lnk/caches/s/pip", "files.caches[0]")
    assert keys(HERE, caches=(cache,)) == ["files.caches"]
    assert keys(HERE, network_mode="proxy") == ["network.mode"]
    assert keys(HERE, network=NetworkRules(forward=(8080,), expose=(3000,))) == [
        "network.forward", "network.expose"]
    assert keys(HERE, WRITE._replace(commit=True)) == ["files.commit"]
    assert keys(Facts(0, False)) == ["files"]


def test_named_unix_sockets_hold_from_abi_9() -> None:
    sockets = NetworkRules(unix=(UnixSocket("/run/a.sock", False, "network.unix[0]", 2,
                                            "/run/a.sock"),))
    assert keys(HERE, network=sockets) == ["network.unix"]
    assert keys(Facts(9, False), network=sockets) == []
    assert not any("no unix socket" in line
                   for line in judge(a_snapshot(WRITE), Facts(9, False)).narrower)


def test_limits_that_cannot_hold_without_namespaces() -> None:
    snap = a_snapshot(WRITE)
    sized = snap._replace(limits=resolve(Limits(tmp=1 << 30)))
    assert [r.key for r in judge(sized, HERE).refused] == ["limits.tmp"]
    pids = snap._replace(limits=resolve(Limits(pids=100)))
    assert [r.key for r in judge(pids, Facts(7, True)).refused] == ["limits.pids"]
    assert judge(pids, Facts(7, True, cgroup_pids=True)).refused == ()
    assert judge(pids, Facts(7, False)).refused == ()  # a user's are counted
    assert judge(snap, Facts(7, True)).refused == ()  # the defaults: said, not refused


def test_without_a_listener_the_metadata_calls_are_said_refused() -> None:
    said = [line for line in judge(a_snapshot(WRITE), Facts(7, False, listener=False)
                                   ).narrower if "chmod" in line]
    assert len(said) == 1 and "refused (EPERM)" in said[0]
    assert not [line for line in judge(a_snapshot(WRITE), HERE).narrower if "chmod" in line]


def test_the_refusal_names_the_spec_the_key_and_the_fix() -> None:
    error = judge(a_snapshot(WRITE, network_mode="proxy"), HERE).error("/w/agent.toml")
    assert error is not None
    assert error.message.startswith("/w/agent.toml: network.mode: proxy mode needs a "
                                    "network namespace")
    assert "no user namespace can be made here" in error.message
    assert error.hint is not None and "lnk sandbox check" in error.hint


def test_signals_are_scoped_from_abi_6() -> None:
    lost = judge(a_snapshot(WRITE), Facts(5, False)).lost
    assert "signals reach every process of this user" in lost[0]
    assert "signals reach only the sandbox's own" in judge(a_snapshot(WRITE), HERE).lost[0]


def test_root_is_told_what_of_uid_0_is_left() -> None:
    lost = judge(a_snapshot(WRITE), Facts(7, True)).lost
    assert any(line.startswith("run by root: the sandbox is uid 0 without capabilities")
               for line in lost)


@pytest.mark.parametrize(("value", "off"), [("", False), ("auto", False), ("off", True)])
def test_the_switch(value: str, off: bool) -> None:
    assert forced_off({"LNK_NAMESPACES": value} if value else {}) is off


def test_an_unknown_switch_value_is_an_error_naming_the_choices() -> None:
    with pytest.raises(SandboxError, match="LNK_NAMESPACES='no'") as raised:
        forced_off({"LNK_NAMESPACES": "no"})
    assert raised.value.hint is not None and "LNK_NAMESPACES=off" in raised.value.hint


def test_docs_design_carries_the_table_of_promises() -> None:
    text = DOCS.read_text()
    rows = re.findall(r"^\| (.+?) \| (holds|holds narrower|refused|does not hold) \| "
                      r"(.+?) \|$", text, re.M)
    assert [(p.promise, p.holds, p.why) for p in PROMISES] == rows
