"""Red team 2 (issue 26, item 1 and its class): secrets under a read grant, where the
rules by structure (home's dot entries hidden: home_config.py, linux/home.py; root mode's
sandbox as another uid: docs/root-mode.md) meet layouts their tests do not use: a
tool's secrets moved out of a dot entry by the person's environment, a virtual
environment's pip.conf in home, and root's owner-only files by default.

Each reads inside a real sandbox, after proving it started there. Escapes are left
failing under `escaped` (support/red_team.py).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from support.red_team import need, read_inside, secret
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]





# variable -> (its value, relative to home; the secret's path, relative to home)
MOVED = {
    "GNUPGHOME": ("gnupg", "gnupg/private-keys-v1.d/0123ABCD.key"),
    "KUBECONFIG": ("kube/config", "kube/config"),
    "AWS_SHARED_CREDENTIALS_FILE": ("aws/credentials", "aws/credentials"),
    "PASSWORD_STORE_DIR": ("pass", "pass/bank/login.gpg"),
    "HISTFILE": ("history/bash", "history/bash"),
    "NPM_CONFIG_USERCONFIG": ("npm/npmrc", "npm/npmrc"),
    "DOCKER_CONFIG": ("docker", "docker/config.json"),
    "CARGO_HOME": ("cargo", "cargo/credentials.toml"),
}


@pytest.mark.parametrize("variable", list(MOVED))
def test_a_tools_secrets_moved_by_the_persons_environment(sandbox: Sandbox,
                                                          variable: str) -> None:
    """The person's shell exports GNUPGHOME=~/gnupg (or KUBECONFIG, the AWS credentials
    file, pass's store) and runs lnk from it: the secret there is theirs as it was at
    ~/.gnupg, hidden under a read grant of home. Held by structure: every path a
    variable of the launch environment names is hidden there (environment_paths.py)."""
    value, where = MOVED[variable]
    text = secret(sandbox.home / where)
    (sandbox.home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    found = read_inside(sandbox, sandbox.home / "notes.txt", sandbox.home / where,
                        env={variable: str(sandbox.home / value)})
    need(found[str(sandbox.home / "notes.txt")] == "the person's notes\n", found)
    assert text not in found.values(), found


@pytest.mark.parametrize("layout", [
    "~/.venvs/tool",
    "~/venv",  # held: any Python prefix's top-level files are hidden (home_hidden.py)
])
def test_a_virtual_environments_pip_conf_in_home(sandbox: Sandbox, layout: str) -> None:
    top = sandbox.home / layout[2:]
    (top / "bin").mkdir(parents=True)
    (top / "bin" / "python3").write_text("#!/bin/sh\n")
    (top / "pyvenv.cfg").write_text("home = /usr/bin\n")
    password = secrets.token_hex(8)
    (top / "pip.conf").write_text(
        f"[global]\nindex-url = https://me:{password}@pypi.example/simple\n")
    sandbox.chown()
    found = read_inside(sandbox, top / "pip.conf")
    assert not any(password in text for text in found.values()), found


@pytest.mark.requires_root
def test_roots_owner_only_files_in_root_mode_by_default(root_sandbox: Sandbox) -> None:
    """Held: run by root with the default spec, /etc/shadow (root:shadow 0640) is not
    readable: the sandbox is another uid. (A read grant of /etc or / reads it: root's
    grants are read as root reads them, by design, docs/root-mode.md.)"""
    found = read_inside(root_sandbox, Path("/etc/shadow"), Path("/etc/hostname"),
                        spec=None)
    need(found["/etc/hostname"] not in ("ENOENT", "EACCES"), found)
    assert found["/etc/shadow"] in ("EACCES", "ENOENT"), found
