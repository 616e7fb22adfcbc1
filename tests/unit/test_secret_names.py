"""The name rule on real folders: which names it hides, where it looks (and where not),
and the plan's hides for what it found."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.linux.plan import HostLayout, MountOp, build_plan
from supervisor.secret_names import Found, find, matches
from support.views import linux_view

from .test_plan import HOME, LAYOUT, snapshot, spec_grant

BY_NAME = "default hide: by its name, where tools keep secrets"


@pytest.mark.parametrize("name", [
    ".zsh_history", ".irb_history", ".histfile", ".lesshst", ".viminfo", "main.shada",
    "fish_history", "history.db", ".vault-token", "token", "hosts_token.json",
    "credentials", "credentials.toml", ".secrets", "passwords.kdbx", ".authinfo.gpg",
    "auth.json", ".netrc", "Cookies", ".gitcookies", "Session Storage", "id_ed25519",
    "id_rsa.pub", "privkey.pem", "rootCA-key.pem", "server.key", "store.p12",
    ".Xauthority", ".ICEauthority",
])
def test_names_of_secrets_and_histories_match(name: str) -> None:
    assert matches(name)


@pytest.mark.parametrize("name", [
    ".bashrc", ".gitconfig", "config.json", "settings.json", "config.toml", "rootCA.pem",
    "ca.pem", "cert.pem", ".npm", ".cache", ".keyboard", "keybindings.json", "authors",
    "monkey.py", ".local", "init.lua", "hub",
])
def test_settings_and_certificates_do_not(name: str) -> None:
    assert not matches(name)


def _files(home: Path, *names: str) -> None:
    for name in names:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_text("x")


def test_it_looks_only_where_tools_keep_their_files(tmp_path: Path) -> None:
    home = tmp_path.resolve()
    _files(home, ".irb_history", "token.txt", ".tokens/", "proj/.zsh_history",
           ".config/hub", ".config/tool/token", ".config/tool/sub/token",
           ".local/share/tool/auth.json", ".local/state/tool/history",
           ".mytool/credentials")
    found = find(str(home))
    assert found == (
        Found(str(home / ".irb_history"), False),
        Found(str(home / ".tokens"), True),
        Found(str(home / ".config/tool/token"), False),
        Found(str(home / ".local/share/tool/auth.json"), False),
        Found(str(home / ".local/state/tool/history"), False),
    )


def test_what_the_listing_does_not_reach_is_hidden_whole(tmp_path: Path) -> None:
    """Past its bound the rule cannot tell a secret from the rest: each folder it would
    have looked into is hidden whole, and the launch says so (found by the red team: a
    token in the 530th tool folder was read)."""
    home = tmp_path.resolve()
    _files(home, ".config/aaa/token", ".config/bbb/", ".config/zzz/token",
           ".local/share/tool/")
    found = find(str(home), max_folders=3)  # home, ~/.config, ~/.config/aaa
    assert found == (
        Found(str(home / ".config/aaa/token"), False),
        Found(str(home / ".config/bbb"), True, unlooked=True),
        Found(str(home / ".config/zzz"), True, unlooked=True),
        Found(str(home / ".local/share"), True, unlooked=True),
    )
    layout = HostLayout(**{**LAYOUT._asdict(), "secrets": found})
    plan = build_plan(linux_view(snapshot(spec_grant("~", str(home), "read",
                                                     "files.read[0]"))),
                      layout, root_mode=False)
    hidden = [op.dest for op in plan.ops if op.kind == "tmpfs" and "not looked at" in
              op.reason]
    assert sorted(hidden) == [str(home / ".config/bbb"), str(home / ".config/zzz"),
                              str(home / ".local/share")]
    assert any(note.startswith("secrets by name: the listing of home's tool folders "
                               "reached its bound") for note in plan.notes)


def test_hidden_places_and_links_are_not_looked_into(tmp_path: Path) -> None:
    home = tmp_path.resolve()
    _files(home, ".config/gh/token", "elsewhere/token")
    (home / ".config" / "linked").symlink_to(home / "elsewhere")
    assert find(str(home), (str(home / ".config/gh"),)) == ()


def test_the_plan_hides_what_it_found_unless_a_grant_names_it() -> None:
    found = (Found(f"{HOME}/.irb_history", False), Found(f"{HOME}/.tokens", True),
             Found(f"{HOME}/.config/tool/token", False))
    layout = HostLayout(**{**LAYOUT._asdict(), "secrets": found})
    snap = snapshot(spec_grant("~", HOME, "read", "files.read[0]"),
                    spec_grant("~/.config/tool/token", f"{HOME}/.config/tool/token", "read",
                               "files.read[1]", is_dir=False))
    ops = build_plan(linux_view(snap), layout, root_mode=False).ops
    hides = [op for op in ops if op.reason == BY_NAME or op.dest == f"{HOME}/.tokens"]
    assert hides == [MountOp("hide-file", f"{HOME}/.irb_history", reason=BY_NAME),
                     MountOp("tmpfs", f"{HOME}/.tokens", reason=BY_NAME),
                     MountOp("remount-ro", f"{HOME}/.tokens", reason="hidden folder")]
