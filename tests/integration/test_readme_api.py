"""README's example of the Python API runs, and prints what README says it prints.

The code and its output are read from README.md (the blocks after `<!-- example: api
-->` and `<!-- example: api output -->`), so the documentation cannot drift from what
the API does; run as a harness runs it, as root and as a user, in a project folder."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from support import capabilities as caps
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

README = Path(__file__).resolve().parent.parent.parent / "README.md"


def block(marker: str) -> str:
    found = re.search(rf"<!-- example: {re.escape(marker)} -->\n```[a-z]*\n(.*?)```",
                      README.read_text(), re.S)
    assert found, f"README has no block marked 'example: {marker}'"
    return found.group(1)


def test_the_readme_example_prints_what_the_readme_says(sandbox: Sandbox) -> None:
    done = subprocess.run([*sandbox.who.prefix, str(caps.VENV_BIN / "python"), "-c",
                           block("api")], cwd=sandbox.project, env=sandbox.env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block("api output")
    assert (sandbox.project / "notes.txt").read_text() == "written through the sandbox\n"
