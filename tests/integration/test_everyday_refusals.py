"""Everyday use, issue 31: each refusal a newcomer met, as the transcript of the real
command (what was typed, what it printed, its status), as root (root mode) and as the
unprivileged test user: a report the sandbox could forge, ..."""

from __future__ import annotations

import json
import subprocess

import pytest

from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def transcript(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


# -- a report the sandbox could write is refused ------------------------------------------


def test_a_report_inside_the_folder_the_sandbox_writes_is_refused(sandbox: Sandbox) -> None:
    """The README's agent recipe once put it there: the sandbox appended a forged
    refusal line to it. Now the launch is refused, naming why and where to put it."""
    done = sandbox.lnk("run", "--report", "refusals.jsonl", "--", "sh", "-c", "echo RAN")
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: --report refusals.jsonl is inside {sandbox.project}, which the "
        "sandbox writes (files.write[0]: .): it could add refusals that never happened to "
        "the report, or take some out\n"
        "  hint: name a file outside every folder the sandbox writes, as in --report "
        "~/refusals.jsonl\n"))
    assert not (sandbox.project / "refusals.jsonl").exists()
    spec = '[files]\nwrite = ["./out"]\nread = ["."]\n'
    (sandbox.project / "out").mkdir()
    sandbox.chown()
    done = sandbox.lnk("run", "--report", "out/deep/../r.jsonl", "--", "true", spec=spec)
    assert done.returncode == 125 and "which the sandbox writes (files.write[0]: ./out)" \
        in done.stderr, done.stderr
    # Outside every written folder (its sibling, read only): written, with what was refused.
    done = sandbox.lnk("run", "--report", str(sandbox.home / "r.jsonl"), "--", "sh", "-c",
                       "echo > out/x; echo RAN", spec=spec + '[commands]\nprograms = ["sh"]\n')
    assert (done.returncode, done.stdout) == (0, "RAN\n"), done.stderr
    assert (sandbox.home / "r.jsonl").read_text() == ""


def test_a_forged_line_cannot_reach_a_report_outside(sandbox: Sandbox) -> None:
    """What the sandbox writes where it may never lands in the report: a control that
    the same command, with the report in the folder, would have reached it."""
    report = sandbox.home / "refusals.jsonl"
    forge = ('printf \'{"kind": "program", "subject": "/forged"}\\n\' >> refusals.jsonl; '
             f'printf x >> {report} 2>/dev/null; echo ok')
    done = sandbox.lnk("run", "--report", str(report), "--", "sh", "-c", forge)
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
    assert report.read_text() == ""  # home is not seen: the forgery went nowhere
    assert json.loads((sandbox.project / "refusals.jsonl").read_text())["subject"] == "/forged"
