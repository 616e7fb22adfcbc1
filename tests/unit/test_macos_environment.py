"""The command's environment on macOS (review section 4.1, item 7): temp names under the
run's own folder, and git pointed away from global settings Seatbelt would answer EPERM
for, judged by what the profile itself lets the sandbox read."""

from __future__ import annotations

from supervisor.grants import Grant, Snapshot
from supervisor.macos.environment import git_settings, sandbox_environment
from supervisor.macos.profile import MacHost, readable
from supervisor.policy import RunSettings
from support.views import mac_view

HOME = "/Users/me"
TEMP = "/private/var/folders/zz/T/lnk-sandbox-1"
CALLER = {"HOME": HOME, "PATH": "/usr/bin:/bin", "TMPPREFIX": "/tmp/zsh",
          "DYLD_INSERT_LIBRARIES": "/tmp/x.dylib", "GIT_PAGER": "less"}


def snapshot(*grants: Grant, keep: tuple[str, ...] = ("HOME", "PATH", "TMPPREFIX"),
             assign: tuple[tuple[str, str], ...] = ()) -> Snapshot:
    write = Grant(".", HOME + "/proj", "write", "files.write[0]", "files.write[0]", 1)
    hides = (Grant("~/.ssh", HOME + "/.ssh", "hide", "default hide", None, None),)
    return Snapshot(
        1,
        "spec.toml",
        HOME,
        HOME + "/proj",
        HOME + "/.lnk",
        501,
        (write, *grants, *hides),
        None,
        RunSettings("none", keep, assign, None, None))


def environment(snap: Snapshot, host: MacHost | None = None) -> dict[str, str]:
    host = host or MacHost(home=HOME, temp=TEMP)
    return sandbox_environment(snap, TEMP, caller=CALLER,
                               readable=lambda path: readable(mac_view(snap), host, path))


def test_temp_names_go_under_the_runs_own_folder() -> None:
    env = environment(snapshot())
    assert env["TMPDIR"] == TEMP + "/"
    assert env["TMPPREFIX"] == TEMP + "/zsh"  # zsh's here-documents, not /tmp/zsh
    assert env["CLANG_MODULE_CACHE_PATH"] == TEMP + "/clang-module-cache"
    assert "DYLD_INSERT_LIBRARIES" not in env
    spec = snapshot(assign=(("TMPPREFIX", "/Users/me/proj/.z"),))
    assert environment(spec)["TMPPREFIX"] == "/Users/me/proj/.z"  # the spec's own wins


def test_git_reads_no_global_settings_the_sandbox_cannot_read() -> None:
    """The default spec reads no home: git would die on EPERM for ~/.gitconfig."""
    env = environment(snapshot())
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["GIT_CONFIG_COUNT"] == "2"
    assert [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(2)] == [
        ("core.attributesFile", "/dev/null"), ("core.excludesFile", "/dev/null")]


def test_git_reads_the_global_settings_the_sandbox_reads() -> None:
    home = Grant("~", HOME, "read", "files.read[0]", "files.read[0]", 1)
    assert "GIT_CONFIG_GLOBAL" not in environment(snapshot(home))
    # ~/.config hidden: ~/.gitconfig is read, and it alone (git skips the XDG one).
    config = Grant("~/.config", HOME + "/.config", "hide", "files.hide[0]", "files.hide[0]", 1)
    env = environment(snapshot(home, config))
    assert env["GIT_CONFIG_GLOBAL"] == HOME + "/.gitconfig"
    assert "GIT_CONFIG_COUNT" not in env  # its own settings may name those files
    # Only ~/.config/git is granted: that one.
    xdg = Grant("~/.config/git", HOME + "/.config/git", "read", "files.read[0]",
                "files.read[0]", 1)
    assert environment(snapshot(xdg))["GIT_CONFIG_GLOBAL"] == HOME + "/.config/git/config"


def test_what_the_spec_or_caller_says_of_git_wins() -> None:
    spec = snapshot(assign=(("GIT_CONFIG_GLOBAL", "/Users/me/proj/gitconfig"),))
    assert environment(spec)["GIT_CONFIG_GLOBAL"] == "/Users/me/proj/gitconfig"
    assert git_settings({"HOME": HOME, "GIT_CONFIG_GLOBAL": "/x"}, lambda p: False) == {}
    counted = git_settings({"HOME": HOME, "GIT_CONFIG_COUNT": "1"}, lambda p: False)
    assert counted == {"GIT_CONFIG_GLOBAL": "/dev/null"}
    assert git_settings({}, lambda p: False) == {}  # no HOME: git looks for none


def test_without_a_profiles_answer_git_is_left_alone() -> None:
    env = sandbox_environment(snapshot(), TEMP, caller=CALLER)
    assert "GIT_CONFIG_GLOBAL" not in env and env["TMPPREFIX"] == TEMP + "/zsh"
