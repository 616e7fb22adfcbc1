"""Every recipe in the README, run as written, as root and as the test user.

A recipe is the README's text between `<!-- recipe: NAME -->` and `<!-- /recipe -->`: a
`` `FILE`: `` line names the TOML block after it (written to the project), and each
`$ COMMAND` line of a console block is run by sh in the project folder, its output (stdout
and stderr as they came) compared with the lines after it, `(exit status N)` standing
for a status other than 0. In what a command printed, the project folder reads as
/home/you/proj and home as /home/you, as the README writes them. Each test makes the
project a recipe assumes (a repository, a Makefile, a registry to install from), and
then checks what the transcript cannot show.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import registry
from support.capabilities import VENV_BIN, missing
from support.netlab import Lab
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
PROJECT, HOME = "/home/you/proj", "/home/you"


@dataclass
class Step:
    command: str
    expected: str


@dataclass
class Recipe:
    files: dict[str, str]
    steps: list[Step]


def recipe(name: str) -> Recipe:
    match = re.search(rf"<!-- recipe: {name} -->\n(.*?)<!-- /recipe -->", README, re.S)
    assert match, f"no recipe {name!r} in the README"
    files: dict[str, str] = {}
    steps: list[Step] = []
    named = None
    for block in re.finditer(r"^`([^`\n]+)`:$|^```(toml|console)\n(.*?)^```$",
                             match.group(1), re.S | re.M):
        if block.group(1):
            named = block.group(1)
        elif block.group(2) == "toml":
            assert named, "a TOML block needs a `FILE`: line before it"
            files[named], named = block.group(3), None
        else:
            for chunk in re.split(r"^\$ ", block.group(3), flags=re.M)[1:]:
                command, _, output = chunk.partition("\n")
                steps.append(Step(command, output))
    return Recipe(files, steps)


def run_recipe(sandbox: Sandbox, name: str, *, cwd: Path | None = None,
               env: dict[str, str] | None = None, files: dict[str, str] | None = None,
               path: str | None = None, after: Callable[[], None] | None = None) -> None:
    """Write the recipe's files (or `files`, the test's own version of them), then run
    each step as the sandbox's user and compare what it printed; `after` runs after
    each step."""
    found = recipe(name)
    where = cwd or sandbox.project
    for file, text in (files or found.files).items():
        (where / file).write_text(text)
    sandbox.chown()
    environment = sandbox.env({"PATH": path or f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
                               **(env or {})})
    for step in found.steps:
        done = subprocess.run([*sandbox.who.prefix, "sh", "-c", step.command], cwd=where,
                              env=environment, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        shown = done.stdout.replace(str(where), PROJECT).replace(str(sandbox.home), HOME)
        if done.returncode:
            shown += f"(exit status {done.returncode})\n"
        assert shown == step.expected, f"$ {step.command}\n{shown}"
        if after is not None:
            after()


def test_every_recipe_is_run_here() -> None:
    names = re.findall(r"<!-- recipe: (\w+) -->", README)
    tests = {n.removeprefix("test_recipe_") for n in globals() if n.startswith("test_recipe_")}
    assert sorted(names) == sorted(tests)


def test_recipe_path(sandbox: Sandbox) -> None:
    """lnk on PATH, from the clone: what a fresh login's PATH finds."""
    if sandbox.who.is_root is False and not os.access(REPO, os.R_OK | os.X_OK):
        missing("the test user cannot read this clone")
    run_recipe(sandbox, "path", cwd=REPO, path=f"{sandbox.home}/.local/bin:/usr/bin:/bin")
    assert (sandbox.home / ".local" / "bin" / "lnk").resolve() == (VENV_BIN / "lnk").resolve()


def test_recipe_agent(sandbox: Sandbox) -> None:
    (sandbox.project / "app.py").write_text("# TODO: handle empty input\nprint('hi')\n")
    run_recipe(sandbox, "agent")
    assert (sandbox.lnk_home / "agents" / "coder").is_dir()


PUBLIC = "198.51.100.7"  # no private kind: the proxy lets a name lead there


def test_recipe_packages(sandbox: Sandbox) -> None:
    """pip and npm through the proxy, from registries the test serves in a network of
    its own under the real names; then, the project's installs gone, again from the
    caches."""
    certs = registry.certificates(sandbox.base / "certs")
    root = sandbox.base / "registry"
    registry.build(root)
    ca = sandbox.base / "ca" / "ca.pem"
    ca.parent.mkdir()
    ca.write_bytes(certs["ca"].read_bytes())
    lab = Lab(sandbox.base, {f"{n}.": [[PUBLIC]] for n in registry.NAMES}, [PUBLIC],
              https={"address": PUBLIC, "root": str(root), "cert": str(certs["cert"]),
                     "key": str(certs["key"])})
    box = lab.supervised(sandbox)
    text = recipe("packages").files["packages.toml"]
    assert text.count("set = { ") == 1
    # The test's own certificate authority, readable inside; no pip settings of the host.
    trusted = text.replace("[files]\n", f'[files]\nread = ["{ca.parent}"]\n').replace(
        "set = { ", f'set = {{ PIP_CERT = "{ca}", NPM_CONFIG_CAFILE = "{ca}", '
        'PIP_CONFIG_FILE = "/dev/null", ')
    fetched: list[str] = []

    def served() -> None:  # each step is a run of the lab of its own, with its own log
        fetched.extend(path for _, _, path in lab.log()["requests"])

    run_recipe(box, "packages", files={"packages.toml": trusted}, after=served)
    check = (".venv/bin/python -c 'import six; print(six.FROM)'; "
             "node -p \"require('left-pad')('x', 3, '.')\"")
    done = sandbox.run("sh", "-c", check, spec=trusted)
    assert (done.returncode, done.stdout) == (0, "the test registry\n..x\n"), done.stderr
    subprocess.run(["rm", "-rf", str(sandbox.project / ".venv"),
                    str(sandbox.project / "node_modules")], check=True)
    run_recipe(box, "packages", files={"packages.toml": trusted}, after=served)
    assert fetched.count(f"/packages/{registry.WHEEL}") == 1, fetched
    assert fetched.count(f"/tarballs/{registry.TARBALL}") == 1, fetched
    assert not (sandbox.home / ".npm").exists() and not (sandbox.home / ".cache").exists()


def test_recipe_commit(sandbox: Sandbox) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(sandbox.project), "-c", "safe.directory=*", *args],
                       check=True, capture_output=True)

    (sandbox.home / ".gitconfig").write_text(
        "[user]\n\tname = Ann Example\n\temail = ann@example.org\n")
    git("init", "-q", "-b", "main")
    (sandbox.project / "greeting").write_text("helo\n")
    git("add", "greeting")
    git("-c", "user.name=Ann Example", "-c", "user.email=ann@example.org", "commit", "-qm",
        "First commit")
    (sandbox.project / "greeting").write_text("hello\n")
    run_recipe(sandbox, "commit")
    status = subprocess.run(["git", "-C", str(sandbox.project), "-c", "safe.directory=*",
                             "status", "--short"], capture_output=True, text=True,
                            check=True)
    assert status.stdout == "?? commit.toml\n"


def test_recipe_build(sandbox: Sandbox) -> None:
    (sandbox.project / "Makefile").write_text("hello: hello.c\n\tcc -o hello hello.c\n")
    (sandbox.project / "hello.c").write_text(
        '#include <stdio.h>\nint main(void) { puts("hello, built"); return 0; }\n')
    run_recipe(sandbox, "build")
    learned = tomllib.loads((sandbox.project / "build.toml").read_text())
    assert {"make", "cc"} <= set(learned["commands"]["programs"])
