"""Red team 26h (issue 26): an independent attack on four fixes of red team 26f/26g's
findings, with instances their own tests do not use.

1. Home by another path (grants.check_home_alias): a bind of a folder *inside* home
   (~/.config, ~/.ssh bound elsewhere), an overlay whose lower folder is home, a bind
   whose path holds a space and a backslash (mountinfo's octal escapes).
2. The dotfiles folder a dot link leads into (home_hidden._linked_holder): Stow's own
   `--dotfiles` layout (`dot-bashrc`), a link into a git worktree or a submodule (a
   `.git` file: the history is elsewhere), and the false hide of a synced folder
   (`~/.bashrc -> Dropbox/.bashrc`).
3. conda's and AppImage's places (home_hidden._prefix_settings, _portable_homes): a
   project's conda environment (`conda create -p ~/src/proj/env`), an AppImage renamed
   without its suffix (AppImage's portable home is `$APPIMAGE.home`, whatever its name).
4. Options and this launch (environment_paths.read_value, this_launch): a value whose
   first word is the running lnk, then a script naming the grant; an options value whose
   quoted option is a command naming the grant as a folder whose files run.

Each plants or reads inside a real sandbox, then runs the person's real tool outside where
there is one; what gets out is a strict xfail under `escaped(...)`.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from support.red_team import (
    HOME_READ,
    escaped,
    host,
    need,
    payload,
    ran,
)
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

NOTES = "the person's notes\n"

FINDER = r"""
import json, os, sys, zlib
print("STARTED", flush=True)
wanted, roots = json.loads(sys.argv[1]), sys.argv[2:]
found = {}
for root in roots:
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1 << 20)
            except OSError:
                continue
            texts = [data]
            try:
                texts.append(zlib.decompress(data))
            except Exception:
                pass
            for text in wanted:
                if any(text.encode() in t for t in texts):
                    found.setdefault(text, []).append(path)
print("FOUND " + json.dumps(found), flush=True)
"""


def token() -> str:
    return f"tok-{secrets.token_hex(10)}"


def find_inside(box: Sandbox, wanted: list[str], *roots: Path,
                spec: str = HOME_READ) -> dict[str, list[str]] | None:
    """Where inside each wanted text was read; None where lnk refused the launch."""
    done = box.run(PYTHON_INSIDE, "-c", FINDER, json.dumps(wanted), *map(str, roots),
                   spec=spec)
    if done.returncode == 125 and "STARTED" not in done.stdout:
        return None
    lines = done.stdout.splitlines()
    need(lines[:1] == ["STARTED"] and lines[-1:] and lines[-1].startswith("FOUND "),
         f"the finder never ran inside (exit {done.returncode}):\n{done.stderr}")
    found: dict[str, list[str]] = json.loads(lines[-1][6:])
    return found


def shown(box: Sandbox, path: Path, spec: str = HOME_READ) -> bool:
    """Whether a sandbox under `spec` reads the file at `path`."""
    done = box.run(PYTHON_INSIDE, "-c", "import sys; print('STARTED');"
                   "print(open(sys.argv[1]).read())", str(path), spec=spec)
    need("STARTED" in done.stdout, f"never started inside:\n{done.stderr}")
    return done.returncode == 0


def git(box: Sandbox, folder: Path, *args: str) -> None:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "P", "GIT_AUTHOR_EMAIL": "p@x",
           "GIT_COMMITTER_NAME": "P", "GIT_COMMITTER_EMAIL": "p@x",
           "GIT_CEILING_DIRECTORIES": str(box.base),
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow",
           "GIT_CONFIG_VALUE_0": "always"}
    done = host(box, "git", *args, cwd=folder, env=env)
    need(done.returncode == 0, f"the person's git {args}: {done.stderr}")


# == 1. home by another path ================================================================

@pytest.mark.requires_root
@escaped("check_home_alias finds mounts whose top holds home's folder; a bind of a folder "
         "inside home (~/.config bound at /srv/cfg) shows it too, and a write grant of it "
         "writes what runs as the person")
def test_a_bind_of_a_folder_inside_home_is_written(sandbox: Sandbox) -> None:
    """~/.config bound at another path (a container's volume, a backup's bind): a write
    grant of that path writes ~/.config, which a grant of `~/.config` itself is refused."""
    config = sandbox.home / ".config"
    (config / "autostart").mkdir(parents=True)
    (sandbox.home / "notes.txt").write_text(NOTES)
    other = sandbox.base / "srv-cfg"
    other.mkdir()
    sandbox.chown()
    subprocess.run(["mount", "--bind", str(config), str(other)], check=True)
    try:
        done = sandbox.run("/bin/sh", "-c",
                           f"echo STARTED; echo planted > {other}/autostart/x.desktop",
                           spec=f'[files]\nwrite = [".", "{other}"]\n')
    finally:
        subprocess.run(["umount", "-l", str(other)], check=False)
    need(done.returncode == 125 or "STARTED" in done.stdout, f"never started: {done.stderr}")
    assert not (config / "autostart" / "x.desktop").exists(), done.stderr


@pytest.mark.requires_root
@escaped("check_home_alias finds mounts whose top holds home's folder; ~/.ssh bound "
         "elsewhere shows its keys to a read grant of that path, unhidden")
def test_a_bind_of_ssh_is_read(sandbox: Sandbox) -> None:
    secret = token()
    (sandbox.home / ".ssh").mkdir()
    (sandbox.home / ".ssh" / "id_ed25519").write_text(f"KEY {secret}\n")
    other = sandbox.base / "srv-k"
    other.mkdir()
    sandbox.chown()
    subprocess.run(["mount", "--bind", str(sandbox.home / ".ssh"), str(other)], check=True)
    try:
        found = find_inside(sandbox, [secret], other,
                            spec=f'[files]\nread = ["{other}"]\nwrite = ["."]\n')
    finally:
        subprocess.run(["umount", "-l", str(other)], check=False)
    assert not found, found


@pytest.mark.requires_root
@escaped("check_home_alias knows binds (the mount table's device and root) and one "
         "folder's identity; an overlay whose lower folder is home has its own device "
         "and inodes, and shows home's dot entries unhidden")
def test_an_overlay_of_home_is_read(sandbox: Sandbox) -> None:
    if sandbox.who.is_root:
        pytest.skip("root mode shows a grant through an idmapped mount, which overlayfs "
                    "refuses: the launch fails for that, not for the alias")
    secret = token()
    (sandbox.home / ".config" / "tool").mkdir(parents=True)
    (sandbox.home / ".config" / "tool" / "hosts.yml").write_text(f"oauth_token: {secret}\n")
    (sandbox.home / "notes.txt").write_text(NOTES)
    merged = sandbox.base / "merged"
    merged.mkdir()
    empty = sandbox.base / "empty"
    empty.mkdir()
    sandbox.chown()
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={sandbox.home}:{empty}", str(merged)], check=True)
    try:
        need((merged / "notes.txt").read_text() == NOTES, "the overlay does not show home")
        found = find_inside(sandbox, [secret], merged,
                            spec=f'[files]\nread = ["{merged}"]\nwrite = ["."]\n')
    finally:
        subprocess.run(["umount", "-l", str(merged)], check=False)
    need(found is not None, "refused")
    assert not found, found


@pytest.mark.requires_root
def test_a_bind_of_home_at_a_path_with_a_space_and_a_backslash(sandbox: Sandbox) -> None:
    """mountinfo writes ` ` and `\\` as octal escapes (\\040, \\134): undone, the alias
    is found and a read grant of it refused."""
    other = sandbox.base / "data home\\x"
    other.mkdir()
    (sandbox.home / "notes.txt").write_text(NOTES)
    sandbox.chown()
    subprocess.run(["mount", "--bind", str(sandbox.home), str(other)], check=True)
    try:
        done = sandbox.run(PYTHON_INSIDE, "-c", "print('STARTED')",
                           spec=f'[files]\nread = [{json.dumps(str(other))}]\n'
                           'write = ["."]\n')
    finally:
        subprocess.run(["umount", "-l", str(other)], check=False)
    assert (done.returncode, "by another path" in done.stderr) == (125, True), done.stderr


# == 2. the dotfiles folder a dot link leads into ============================================

@pytest.mark.parametrize("layout", [
    pytest.param("stow --dotfiles", marks=escaped(
        "_linked_holder knows Stow's mirror by the link's own path at the target's end; "
        "Stow's --dotfiles (dot-bashrc for .bashrc) mirrors it renamed, and a stow folder "
        "that is no repository shows its other packages")),
    pytest.param("a worktree", marks=escaped(
        "_linked_holder stops at the first repository mark; a worktree's .git is a file, "
        "its history is the main repository's, which stays shown")),
    pytest.param("a submodule", marks=escaped(
        "_linked_holder stops at the first repository mark; a submodule's .git is a file, "
        "the dotfiles repository above it stays shown with its other packages")),
])
def test_the_dotfiles_folder_by_another_layout(sandbox: Sandbox, layout: str) -> None:
    secret = token()
    home = sandbox.home
    (home / "notes.txt").write_text(NOTES)
    if layout == "stow --dotfiles":
        stow = home / "dotfiles"
        (stow / "bash").mkdir(parents=True)
        (stow / "bash" / "dot-bashrc").write_text("alias ll='ls -l'\n")
        (stow / "aws" / "dot-aws").mkdir(parents=True)
        (stow / "aws" / "dot-aws" / "credentials").write_text(
            f"aws_secret_access_key = {secret}\n")
        (home / ".bashrc").symlink_to("dotfiles/bash/dot-bashrc")
        sandbox.chown()
    else:
        main = home / "dotfiles"
        main.mkdir()
        (main / "bashrc").write_text("alias ll='ls -l'\n")
        (main / "aws").mkdir()
        (main / "aws" / "credentials").write_text(f"aws_secret_access_key = {secret}\n")
        sandbox.chown()
        git(sandbox, main, "init", "-q", "-b", "main")
        git(sandbox, main, "add", "-A")
        git(sandbox, main, "commit", "-q", "-m", "dotfiles")
        if layout == "a worktree":
            git(sandbox, main, "worktree", "add", "-q", str(home / "dotfiles-laptop"))
            (home / ".bashrc").symlink_to("dotfiles-laptop/bashrc")
        else:
            vim = sandbox.base / "vim-src"
            vim.mkdir()
            (vim / "vimrc").write_text("set nu\n")
            sandbox.chown()
            git(sandbox, vim, "init", "-q", "-b", "main")
            git(sandbox, vim, "add", "-A")
            git(sandbox, vim, "commit", "-q", "-m", "vim")
            git(sandbox, main, "submodule", "add", "-q", str(vim), "vim")
            (home / ".vimrc").symlink_to("dotfiles/vim/vimrc")
            (home / "dotfiles" / ".bashrc-unused").unlink(missing_ok=True)
        sandbox.chown()
    found = find_inside(sandbox, [secret], home)
    need(found is not None, "refused")
    assert not found, found


def test_a_synced_folder_a_dot_file_lives_in_stays_shown(sandbox: Sandbox) -> None:
    """A common layout that is no Stow: the person keeps .bashrc at the top of their
    synced folder (Dropbox, Nextcloud) and links it from home. The link's target is
    hidden; the person's documents beside it are theirs."""
    synced = sandbox.home / "Dropbox"
    synced.mkdir()
    (synced / ".bashrc").write_text("alias ll='ls -l'\n")
    (synced / "report.txt").write_text(NOTES)
    (sandbox.home / ".bashrc").symlink_to("Dropbox/.bashrc")
    sandbox.chown()
    assert shown(sandbox, synced / "report.txt")


# == 3. conda's and AppImage's places ========================================================

@pytest.mark.parametrize("place", [
    pytest.param("a project's conda env", marks=escaped(
        "home_hidden looks for prefixes at home's top and one below; `conda create -p "
        "~/src/proj/env` (conda's docs: an environment in the project) is deeper")),
    pytest.param("an AppImage renamed", marks=escaped(
        "_portable_homes matches the name NAME.AppImage.home; AppImage's portable home "
        "is $APPIMAGE.home whatever the file's name (~/Applications/Obsidian)")),
    "an AppImage in capitals",
])
def test_a_tools_secret_past_the_fixs_instances(sandbox: Sandbox, place: str) -> None:
    secret = token()
    home = sandbox.home
    if place == "a project's conda env":
        env = home / "src" / "proj" / "env"
        for relative in ("bin", "conda-meta", "etc/conda/activate.d"):
            (env / relative).mkdir(parents=True)
        (env / "conda-meta" / "history").write_text("")
        (env / "bin" / "python3").write_text("#!/bin/sh\n")
        where = env / "etc" / "conda" / "activate.d" / "env_vars.sh"
        where.write_text(f"export OPENAI_API_KEY='{secret}'\n")
    else:
        name = "Obsidian" if place == "an AppImage renamed" else "TOOL-1.0-X86_64.APPIMAGE"
        apps = home / "Applications"
        apps.mkdir()
        (apps / name).write_bytes(b"\x7fELF\x02\x01\x01\x00AI\x02")
        where = apps / f"{name}.home" / ".config" / "tool" / "hosts.yml"
        where.parent.mkdir(parents=True)
        where.write_text(f"oauth_token: {secret}\n")
    (home / "notes.txt").write_text(NOTES)
    sandbox.chown()
    found = find_inside(sandbox, [secret], home)
    need(found is not None, "refused")
    assert not found, found


# == 4. options and this launch ===============================================================

def _attack(box: Sandbox, variable: str, value: str, script: str, name: str) -> str:
    """Launch a writing run with `variable` set, which plants `script`; then the
    person's shell runs the value as their tool would: 'refused' (lnk refused the
    launch), 'ran' (the planted payload `name` ran on the host) or 'held'."""
    done = box.run("/bin/sh", "-c", "echo STARTED; " + script,
                   spec='[files]\nwrite = ["."]\n', env={variable: value})
    if done.returncode == 125 and "STARTED" not in done.stdout:
        return "refused"
    need(done.stdout.startswith("STARTED"), f"never started:\n{done.stderr}")
    host(box, "bash", "-c", value, cwd=box.base)
    return "ran" if name in ran(box) else "held"


def test_a_command_after_lnk_itself_is_judged(sandbox: Sandbox) -> None:
    """PROMPT_COMMAND of a person who runs lnk at each prompt, then a file of the
    project's. Control: the same without lnk first is held. Fixed: this_launch skipped
    every variable whose first word was the running lnk, not only sudo's record."""
    hook = sandbox.project / "prompt.sh"
    hook.write_text("true\n")
    sandbox.chown()
    plant = f"printf '%s' '{payload(sandbox, 'CONTROL')}' > {hook}"
    control = _attack(sandbox, "PROMPT_COMMAND", f". {hook}", plant, "CONTROL")
    need(control != "ran", "the control ran")
    value = f"{LNK} --version >/dev/null\n. {hook}"
    got = _attack(sandbox, "PROMPT_COMMAND", value,
                  f"printf '%s' '{payload(sandbox, 'PROMPT')}' > {hook}", "PROMPT")
    assert got != "ran", got


def test_an_options_value_that_runs_a_folder(sandbox: Sandbox) -> None:
    """FZF_DEFAULT_OPTS's --preview is run by fzf through $SHELL -c; `run-parts FOLDER`
    runs each file of the folder. Control: the same command as EDITOR is refused."""
    preview = f"run-parts {sandbox.project}"
    plant = (f"printf '%s' '{payload(sandbox, 'FZF')}' > {sandbox.project}/p && "
             f"chmod +x {sandbox.project}/p")
    control = _attack(sandbox, "EDITOR", preview, "true", "FZF")
    need(control == "refused", f"the control was {control}")
    got = _attack(sandbox, "FZF_DEFAULT_OPTS", f"--height 40% --preview '{preview}'",
                  plant, "FZF")
    if got != "refused":  # what fzf runs for its preview, through $SHELL -c
        host(sandbox, "sh", "-c", preview, cwd=sandbox.base)
    assert "FZF" not in ran(sandbox), got
