"""Red team, issue 26 item 1: the person's secrets under a read grant of home
(`read = ["~"]`), attacked where the rule by structure (home's dot entries hidden) meets
layouts its own tests do not use: configuration reached without a dot at home's top.

Each attack reads inside a real sandbox (root mode and the unprivileged user) and says
what it read; a secret read is the harm. Escapes are left failing under `escaped`
(support/red_team.py); what held stays as a regression test.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from support.processes import close_pipes
from support.red_team import HOME_READ, READER, need, read_inside
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]



def secret(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"token-{secrets.token_hex(8)}\n"
    path.write_text(text)
    return text


@pytest.mark.parametrize("layout", [
    "a dot folder",
    "linked into dotfiles",
])
def test_an_unknown_tools_secret_whatever_folder_holds_it(sandbox: Sandbox,
                                                         layout: str) -> None:
    """GNU Stow's layout, `~/.config/TOOL -> ../dotfiles/TOOL`, for a tool nobody listed
    (a random name): its token is configuration, as the same file at ~/.config/TOOL."""
    tool = "t" + secrets.token_hex(4)
    if layout == "a dot folder":
        path = sandbox.home / ".config" / tool / "token"
    else:
        path = sandbox.home / "dotfiles" / tool / "token"
        (sandbox.home / ".config").mkdir()
        (sandbox.home / ".config" / tool).symlink_to(f"../dotfiles/{tool}")
    text = secret(path)
    (sandbox.home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    found = read_inside(sandbox, sandbox.home / "notes.txt", path,
                        sandbox.home / ".config" / tool / "token")
    need(found[str(sandbox.home / "notes.txt")] == "the person's notes\n", found)
    assert text not in found.values(), found


@pytest.mark.parametrize("where", [
    "~/.config",
    "~/cfg",
])
def test_the_persons_xdg_config_home_under_a_read_grant_of_home(sandbox: Sandbox,
                                                               where: str) -> None:
    config = sandbox.home / where[2:]
    path = config / ("t" + secrets.token_hex(4)) / "hosts.yml"
    text = secret(path)
    (sandbox.home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    found = read_inside(sandbox, sandbox.home / "notes.txt", path,
                        env={"XDG_CONFIG_HOME": str(config)})
    need(found[str(sandbox.home / "notes.txt")] == "the person's notes\n", found)
    assert text not in found.values(), found


@pytest.mark.parametrize("prefix", [
    "~/.pyenv/versions/3.11.9",
    "~/miniconda3",
])
def test_a_python_prefixs_pip_conf_under_a_read_grant_of_home(sandbox: Sandbox,
                                                              prefix: str) -> None:
    top = sandbox.home / prefix[2:]
    (top / "bin").mkdir(parents=True)
    (top / "bin" / "python3").write_text("#!/bin/sh\n")
    password = secrets.token_hex(8)
    path = top / "pip.conf"
    path.write_text(f"[global]\nindex-url = https://me:{password}@pypi.example/simple\n")
    sandbox.chown()
    found = read_inside(sandbox, top / "bin" / "python3", path)
    need(found[str(top / "bin" / "python3")] == "#!/bin/sh\n", found)
    assert not any(password in text for text in found.values()), found


def test_a_dot_path_nobody_listed_and_one_made_during_the_run(sandbox: Sandbox) -> None:
    """Held: random dot names, two and four folders deep, and a dot folder the person's
    tool makes in home while the run lasts, stay unseen; the person's files are read."""
    deep = sandbox.home / f".{secrets.token_hex(3)}" / "a" / "b" / "c" / "key"
    shallow = sandbox.home / f".{secrets.token_hex(3)}" / "x" / "token"
    texts = [secret(deep), secret(shallow)]
    (sandbox.home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    later = sandbox.home / f".{secrets.token_hex(3)}" / "made-during-the-run"
    script = READER.replace("found = {}", "found = {}\nsys.stdin.readline()")
    run = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec",
         str(sandbox.write_spec(HOME_READ)), "--yes", "--", PYTHON_INSIDE, "-c", script,
         str(deep), str(shallow), str(later), str(sandbox.home / "notes.txt")],
        cwd=sandbox.project, env=sandbox.env(), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.stdin is not None and run.stdout is not None
    try:
        need(run.stdout.readline() == "STARTED\n", "the reader never started")
        texts.append(secret(later))
        sandbox.chown()
        run.stdin.write("\n")
        run.stdin.flush()
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
        close_pipes(run)
    found = json.loads(out.splitlines()[-1][5:])
    need(found[str(sandbox.home / "notes.txt")] == "the person's notes\n", (found, err))
    assert not set(texts) & set(found.values()), found
    assert {found[str(p)] for p in (deep, shallow, later)} == {"ENOENT"}, found


@pytest.mark.parametrize("grant", ["link", "link/."])
def test_a_read_grant_of_home_through_a_link(sandbox: Sandbox, grant: str) -> None:
    """Held: home granted by another name (a link to it) hides its dot entries all the
    same, under either name."""
    path = sandbox.home / ".zz" / "token"
    text = secret(path)
    links = sandbox.base / "links"
    links.mkdir()
    (links / "link").symlink_to(sandbox.home)
    sandbox.chown()
    spec = f'[files]\nread = ["{links}/{grant}"]\nwrite = ["."]\n'
    found = read_inside(sandbox, path, links / "link" / ".zz" / "token", spec=spec)
    assert text not in found.values(), found


def test_links_without_a_dot_and_reopened_patterns_lead_nowhere_hidden(
        sandbox: Sandbox) -> None:
    """Held: `~/keys -> .ssh` (a link without a dot at home's top, made the same link
    inside) and a reopened pattern's `*` that is a link (`~/.nvm/versions/node/v9 ->
    ~/.aws`, whose bin/ would be shown) lead to nothing hidden; nvm's real node is shown."""
    key = sandbox.home / ".ssh" / "id_ed25519"
    text = secret(key)
    (sandbox.home / "keys").symlink_to(".ssh")
    aws = secret(sandbox.home / ".aws" / "bin" / "credentials")
    node = sandbox.home / ".nvm" / "versions" / "node"
    (node / "v20.0.0" / "bin").mkdir(parents=True)
    (node / "v20.0.0" / "bin" / "node").write_text("#!/bin/sh\n")
    (node / "v9").symlink_to(os.path.relpath(sandbox.home / ".aws", node))
    sandbox.chown()
    found = read_inside(sandbox, sandbox.home / "keys" / "id_ed25519",
                        node / "v9" / "bin" / "credentials",
                        node / "v20.0.0" / "bin" / "node")
    need(found[str(node / "v20.0.0" / "bin" / "node")] == "#!/bin/sh\n", found)
    assert text not in found.values() and aws not in found.values(), found
