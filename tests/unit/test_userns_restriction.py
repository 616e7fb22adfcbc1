"""Ubuntu's AppArmor restriction of user namespaces, recognised from the sysctl and from
bwrap's own words (supervisor/linux/userns.py): pure functions, exact texts.

bwrap's lines are its own (bubblewrap.c, 0.8 to 0.11): what it prints, after "bwrap: ",
where the kernel refused it its user namespace, and a few of its other failures that
must not be taken for that.
"""

from __future__ import annotations

import pytest

from supervisor.linux.idmapped import SANDBOX_GID, SANDBOX_UID
from supervisor.linux.userns import (
    PROFILE,
    Restriction,
    explain,
    namespace_failure,
    remedies,
    restricts,
    trial_argv,
)

UID_MAP = "setting up uid map: Permission denied"


@pytest.mark.parametrize(("sysctl", "apparmor", "expected"), [
    ("1", "Y", True),
    ("1\n", "Y\n", True),
    ("1", None, True),     # the module's parameter unreadable: the sysctl is AppArmor's
    ("0", "Y", False),     # restriction off
    ("1", "N", False),     # AppArmor disabled at boot (apparmor=0)
    (None, None, False),   # no such sysctl: not Ubuntu's AppArmor
    (None, "Y", False),
    ("2", "Y", False),
    ("", "Y", False),
])
def test_the_restriction_is_the_sysctl_at_1_with_apparmor_on(
        sysctl: str | None, apparmor: str | None, expected: bool) -> None:
    assert restricts(sysctl, apparmor) is expected
    assert Restriction(sysctl, apparmor).restricting is expected


@pytest.mark.parametrize(("stderr", "line"), [
    ("bwrap: setting up uid map: Permission denied\n", UID_MAP),
    ("bwrap: setting up uid map: Operation not permitted\n",
     "setting up uid map: Operation not permitted"),
    ("bwrap: setting up gid map: Permission denied\n", "setting up gid map: Permission denied"),
    ("bwrap: error writing to setgroups: Permission denied\n",
     "error writing to setgroups: Permission denied"),
    ("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted\n",
     "loopback: Failed RTM_NEWADDR: Operation not permitted"),
    ("bwrap: Failed RTM_NEWADDR: Operation not permitted\n",
     "Failed RTM_NEWADDR: Operation not permitted"),
    ("bwrap: Creating new namespace failed: Permission denied\n",
     "Creating new namespace failed: Permission denied"),
    ("bwrap: No permissions to creating new namespace, likely because the kernel does not "
     "allow non-privileged user namespaces. On e.g. debian this can be enabled with "
     "'sysctl kernel.unprivileged_userns_clone=1'.\n",
     "No permissions to creating new namespace, likely because the kernel does not allow "
     "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl "
     "kernel.unprivileged_userns_clone=1'."),
    # Among other lines (a warning first), the refusal is found.
    ("bwrap: WARNING: something else\nbwrap: setting up uid map: Permission denied\n",
     UID_MAP),
])
def test_bwraps_words_for_a_refused_namespace_are_recognised(stderr: str, line: str) -> None:
    assert namespace_failure(stderr) == line


@pytest.mark.parametrize("stderr", [
    "",
    "bwrap: Can't find source path /nonexistent: No such file or directory\n",
    "bwrap: execvp true: No such file or directory\n",
    "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n",
    "bwrap: Failed to make / slave: Permission denied\n",
    "bwrap: Unknown option --bind-fd\n",
    # A program's own output quoting the words is not bwrap's line.
    "note: bwrap said setting up uid map: Permission denied yesterday\n",
])
def test_other_failures_are_not_taken_for_a_refused_namespace(stderr: str) -> None:
    assert namespace_failure(stderr) is None


def test_under_the_restriction_the_message_names_the_cause_and_the_profile() -> None:
    error = explain(UID_MAP, Restriction("1", "Y"), bwrap="/usr/bin/bwrap", root_mode=False)
    assert error.message == (
        f"bubblewrap could not set up the sandbox's user namespace ({UID_MAP}): this "
        "machine restricts unprivileged user namespaces with AppArmor "
        "(kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04's default), so "
        "the kernel let it make one but refused it the rights to use it")
    assert error.hint == remedies("/usr/bin/bwrap")
    assert error.exit_status == 125


def test_the_remedies_are_the_exact_commands_and_never_the_sysctl_first() -> None:
    hint = remedies("/usr/bin/bwrap")
    lines = [line.strip() for line in hint.splitlines()]
    assert lines == [
        f"let bwrap make user namespaces by AppArmor's profile for it ({PROFILE}), which "
        "keeps the restriction for every other program:",
        "Ubuntu 25.04 and later ship it; if it is not loaded: "
        "sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict",
        "Ubuntu 24.04: sudo apt install apparmor-profiles apparmor-utils",
        "sudo cp /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/",
        "sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict",
        "or run without namespaces where the spec allows it: `LNK_NAMESPACES=off lnk "
        "sandbox check --spec FILE` says what holds and what it refuses; set "
        "LNK_NAMESPACES=off for the run",
        "turning kernel.apparmor_restrict_unprivileged_userns off is not needed: it would "
        "reopen user namespaces to every program on the machine",
    ]
    # The sysctl is named once, last, and never as a command to run.
    assert "sysctl -w" not in hint and "=0" not in hint
    assert "apparmor_restrict_unprivileged_userns" not in "\n".join(lines[:-1])


def test_a_bwrap_elsewhere_gets_a_profile_of_its_own() -> None:
    hint = remedies("/opt/bubblewrap/bin/bwrap")
    assert ("that profile is for /usr/bin/bwrap; this bwrap is /opt/bubblewrap/bin/bwrap: "
            "give it one of its own:") in hint
    assert ("printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile lnk-bwrap "
            "/opt/bubblewrap/bin/bwrap flags=(unconfined) {\\n  userns,\\n}\\n' | sudo tee "
            "/etc/apparmor.d/lnk-bwrap") in hint
    assert "sudo apparmor_parser -r /etc/apparmor.d/lnk-bwrap" in hint
    # The bwrap profile's commands come first all the same.
    assert hint.index(PROFILE) < hint.index("lnk-bwrap")


def test_root_mode_is_said_to_be_covered_too() -> None:
    error = explain(UID_MAP, Restriction("1", "Y"), bwrap="/usr/bin/bwrap", root_mode=True)
    assert error.message.endswith(
        "; run by root, the sandbox's bwrap runs as a uid of its own without capabilities, "
        "which the restriction covers too")


@pytest.mark.parametrize(("restriction", "where"), [
    (Restriction(None, None), "this machine has no kernel.apparmor_restrict_unprivileged_userns"),
    (Restriction("0", "Y"), "kernel.apparmor_restrict_unprivileged_userns is 0"),
    (Restriction("1", "N"), "kernel.apparmor_restrict_unprivileged_userns is 1 but AppArmor "
                            "is off"),
])
def test_without_the_restriction_no_apparmor_remedy_is_offered(
        restriction: Restriction, where: str) -> None:
    error = explain(UID_MAP, restriction, bwrap="/usr/bin/bwrap", root_mode=False)
    assert error.message == (
        f"bubblewrap could not set up the sandbox's user namespace ({UID_MAP}): the kernel "
        "let it make one but refused it the rights to use it. It is not Ubuntu's AppArmor "
        f"restriction ({where}): something else refuses it, such as a container's seccomp "
        "profile, another security module or user.max_user_namespaces")
    assert error.hint == ("`lnk sandbox check` says what this machine offers; or run "
                          "without namespaces where the spec allows it: `LNK_NAMESPACES=off "
                          "lnk sandbox check --spec FILE` says what holds and what it "
                          "refuses; set LNK_NAMESPACES=off for the run")


def test_a_namespace_refused_outright_is_said_so() -> None:
    error = explain("Creating new namespace failed: Permission denied", Restriction("1", "Y"),
                    bwrap="/usr/bin/bwrap", root_mode=False)
    assert error.message.endswith("so the kernel refused it one")


def test_the_trial_runs_bwrap_with_a_launchs_namespaces() -> None:
    assert trial_argv("/usr/bin/bwrap", root_mode=False, share_net=False) == [
        "/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc",
        "--unshare-uts", "--unshare-net", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--",
        "true"]
    assert trial_argv("/usr/bin/bwrap", root_mode=False, share_net=True) == [
        "/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc",
        "--unshare-uts", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--", "true"]


def test_the_trial_of_root_mode_runs_bwrap_as_the_sandboxs_uid() -> None:
    argv = trial_argv("/usr/bin/bwrap", root_mode=True, share_net=False)
    assert argv[0].endswith("/setpriv")
    assert argv[1:] == [
        f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups", "--",
        "/usr/bin/bwrap", "--uid", "0", "--gid", "0", "--unshare-user", "--unshare-pid",
        "--unshare-ipc", "--unshare-uts", "--unshare-net", "--cap-drop", "ALL",
        "--ro-bind", "/", "/", "--", "true"]
