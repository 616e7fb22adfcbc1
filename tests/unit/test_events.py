"""The refusal log: each refused thing said once on stderr, one report line per refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from supervisor.events import EventLog


def test_a_report_that_cannot_be_written_is_given_up_and_said_once(
        capfd: pytest.CaptureFixture[str]) -> None:
    log = EventLog(os.open("/dev/full", os.O_WRONLY))
    log.add("program", "/usr/bin/curl", "/usr/bin/curl", "commands.programs", 7)
    log.add("program", "/usr/bin/wget", "/usr/bin/wget", "commands.programs", 8)
    log.close()
    assert capfd.readouterr().err == (
        "lnk-sandbox: cannot write the report any more (No space left on device): the "
        "refusals from here on are only said here\n"
        "lnk-sandbox: refused /usr/bin/curl (not in [commands])\n"
        "lnk-sandbox: refused /usr/bin/wget (not in [commands])\n")
    assert len(log.events) == 2


def test_every_refusal_is_one_report_line(tmp_path: Path) -> None:
    path = tmp_path / "report.jsonl"
    log = EventLog(os.open(path, os.O_WRONLY | os.O_CREAT), quiet=True)
    log.add("program", "/usr/bin/curl", "/usr/bin/curl", "commands.programs", 7)
    log.close()
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["pid"] == 7


def test_refusals_past_the_bound_are_counted_and_said_at_the_end(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setattr("supervisor.events.MAX_EVENTS", 2)
    path = tmp_path / "report.jsonl"
    log = EventLog(os.open(path, os.O_WRONLY | os.O_CREAT))
    for pid in range(5):
        log.add("program", "/usr/bin/curl", "/usr/bin/curl", "commands.programs", pid)
    assert (len(log.events), log.dropped) == (2, 3)
    log.close()
    log.close()  # said once
    assert capfd.readouterr().err == (
        "lnk-sandbox: refused /usr/bin/curl (not in [commands])\n"
        "lnk-sandbox: 3 more refusals were not kept or reported (at most 2 a run)\n")
    assert len(path.read_text().splitlines()) == 2


def test_a_program_built_inside_a_written_folder_says_why_it_is_not_listed() -> None:
    """A build's own output refused under a list learn wrote: the line says why learn
    never listed it and the two ways on; a program elsewhere reads as it always did."""
    from supervisor.events import BUILT_INSIDE, Event
    from supervisor.linux.watch import CHANGED, Judge

    judge = Judge(frozenset(), listed=frozenset({"/usr/bin/make"}),
                  written=("/home/you/proj", "/tmp"))
    assert judge.reason("/home/you/proj/hello") == BUILT_INSIDE
    assert judge.reason("/tmp/build/a.out") == BUILT_INSIDE
    assert judge.reason("/home/you/projects/x") == ""
    assert judge.reason("/usr/bin/curl") == ""
    assert judge.reason("/usr/bin/make") == CHANGED
    refused = Event("program", "./hello", "/home/you/proj/hello", "commands.programs", 1,
                    0.0, BUILT_INSIDE)
    assert refused.message() == (
        "refused /home/you/proj/hello (not in [commands]): built inside a folder the "
        "sandbox writes, so never listed by learn; run it outside or list it by path")
    assert refused._replace(reason="").message() == \
        "refused /home/you/proj/hello (not in [commands])"
