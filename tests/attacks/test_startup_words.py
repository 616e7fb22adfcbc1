"""The rule by structure for the person's shell startup files (issue 26; person_settings.py,
docs/runs-as-you.md section 7), attacked with forms no list names: every word anywhere
in ~/.bashrc that names a path in a written folder is held read-only there (a string
the shell may run later, a here-document, a function's body, a PATH element); a name
lnk cannot bound refuses the launch, naming the line.

Each case plants from inside a real sandbox (root mode and the unprivileged user) and
then runs the person's real bash outside, at a terminal, where the form fires (a
prompt, a completion, a key binding, a command typed); the control makes the same
change on the host and sees it run, so the test can see what it judges.
"""

from __future__ import annotations

import secrets
from typing import NamedTuple

import pytest

from support.processes import at_terminal
from support.red_team import SYSTEM_PATH, marker, markers, need, payload, plant_or_refused, ran
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

CANNOT_JUDGE = "lnk cannot judge what"  # grants.check_named's refusal of a startup line


class Case(NamedTuple):
    bashrc: str  # the person's ~/.bashrc; {w} is ~/work, the folder the run writes
    target: str  # the file (in ~/work) the form reaches
    typed: tuple[tuple[bytes, bytes], ...]  # what the person types at their terminal
    refused: str | None = None  # the refusal's text, where nothing bounded is held
    there: bool = True  # the target is there at launch (else the plant makes it)


ENTER = ((b"$ ", b"echo FIRST\r"), (b"FIRST", b"exit\r"))
CASES = {
    "prompt command": Case("PROMPT_COMMAND='{w}/p.sh'", "p.sh", ENTER),
    "completion program": Case("complete -C {w}/c.sh gat", "c.sh", (
        (b"$ ", b"gat \t\t"), (b"gat ", b"\x15echo FIRST\r"), (b"FIRST", b"exit\r"))),
    "key binding": Case("bind -x '\"\\C-t\": {w}/t.sh'", "t.sh", (
        (b"$ ", b"\x14echo FIRST\r"), (b"FIRST", b"exit\r"))),
    "exec in a function": Case("f() {{\n  exec {w}/x\n}}", "x", (
        (b"$ ", b"f\r"), (b"$ ", b"exit 0\r")), there=False),
    "here-document": Case(". /dev/stdin <<'EOF'\n. {w}/h.sh\nEOF", "h.sh", ENTER),
    "beside the file": Case('. "${{BASH_SOURCE%/*}}/work/lib.sh"', "lib.sh", ENTER),
    "trap on debug": Case("trap '{w}/d.sh' DEBUG", "d.sh", ENTER),
    "a PATH element": Case("PATH=$PATH:{w}/tools", "tools/mytool", (
        (b"$ ", b"mytool; echo FIRST\r"), (b"FIRST", b"exit\r")), there=False),
    "a substitution in a variable": Case('x=$(echo {w})/env.sh; . "$x"', "env.sh", ENTER,
                                         refused=CANNOT_JUDGE),
    "a dot path read from a file": Case('. "$HOME/$(cat ~/.which)"', "env.sh", ENTER,
                                        refused="~/.bashrc line 2"),
    "past the folder bound": Case('for f in ~/.rc.d/*; do . "$f"; done', "env.sh", ENTER,
                                  refused=CANNOT_JUDGE),
}


def _bash_at_a_terminal(box: Sandbox, typed: tuple[tuple[bytes, bytes], ...]) -> bytes:
    """The person's interactive bash at a terminal, in home: it reads ~/.bashrc."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(box.home), "LANG": "C.UTF-8", "TERM": "xterm",
           "PS1": "$ "}
    status, output = at_terminal([*box.who.prefix, "bash", "-i"], cwd=box.home, env=env,
                                 typed=typed)
    need(status == 0, f"the person's bash failed ({status}): {output!r}")
    return output


@pytest.mark.parametrize("form", CASES)
def test_what_a_startup_line_names_in_a_written_folder_is_held(sandbox: Sandbox,
                                                              form: str) -> None:
    case = CASES[form]
    name = "p" + secrets.token_hex(4)
    work = sandbox.home / "work"
    (work / "tools").mkdir(parents=True)
    target = work / case.target
    if case.there:
        target.write_text("#!/bin/sh\ntrue\n")
        target.chmod(0o755)
    (sandbox.home / ".which").write_text(f"work/{case.target}\n")
    if form == "past the folder bound":  # more files than lnk reads, the last one ours
        folder = sandbox.home / ".rc.d"
        folder.mkdir()
        for index in range(300):
            (folder / f"a{index:03d}.sh").write_text(f"A{index}=1\n")
        (folder / "zz.sh").write_text(f". ~/work/{case.target}\n")
    # (the system's bash.bashrc sets its own prompt: the person's sets one the test knows)
    (sandbox.home / ".bashrc").write_text("PS1='$ '\n" + case.bashrc.format(w=work) + "\n")
    markers(sandbox)
    sandbox.chown()
    planted = payload(sandbox, name)
    action = ("append", case.target, f"echo {name} >> {marker(sandbox, name)}\n") \
        if case.there else ("make", case.target, planted)
    results = plant_or_refused(sandbox, [action, ("write", "notes.txt", "mine\n")],
                               refusal=case.refused or "(never refused)", cwd=work)
    if case.refused is not None:
        assert "refused" in results, results
    else:
        need(results.get("write notes.txt") == "OK", results)
        assert results[" ".join(action[:2])] != "OK", results
    _bash_at_a_terminal(sandbox, case.typed)
    assert ran(sandbox) == [], results
    # The control: the same change made on the host runs at the person's next bash.
    if case.there:
        with open(target, "a") as handle:
            handle.write(action[2])
    else:
        target.write_text(planted)
        target.chmod(0o755)
    sandbox.chown()
    _bash_at_a_terminal(sandbox, case.typed)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")
