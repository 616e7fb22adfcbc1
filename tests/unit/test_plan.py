"""The Linux launch plan: snapshots compiled to exact, ordered mount operations and bwrap
arguments, with the host's facts given by hand (no privileges, no bwrap)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from supervisor.grants import Grant, Snapshot, resolve
from supervisor.linux.bwrap import INNER_BOOT, BwrapInfo, bwrap_args
from supervisor.linux.plan import (
    INNER_MOUNT,
    SYSTEM_FOLDERS,
    HostLayout,
    LaunchPlan,
    MountOp,
    build_plan,
)
from supervisor.policy import Context, credential_names, effective_policy
from supervisor.spec import load_spec, parse_spec
from support.snapshots import a_snapshot
from support.views import linux_view

HOME = "/home/u"
CWD = "/home/u/proj"
LNK = "/home/u/.lnk"
CREDENTIALS = "default hide: credentials"
SETTINGS = "lnk-sandbox's settings ($LNK_HOME)"
INSTALLATION = "the installation running lnk-sandbox"

# Debian-like: /bin, /sbin, /lib and /lib64 are links into /usr; no /opt, /lib32, /libx32.
LAYOUT = HostLayout(
    system={"/usr": None, "/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib",
            "/lib64": "usr/lib64", "/etc": None},
    inner_source="/src/lnk/inner",
    interpreter="/usr/bin/python3.11",
    interpreter_prefix="/usr",
)

SYSTEM = [
    MountOp("ro-bind", "/usr", "/usr", "system folder"),
    MountOp("symlink", "/bin", "usr/bin", "system folder (a link)"),
    MountOp("symlink", "/sbin", "usr/sbin", "system folder (a link)"),
    MountOp("symlink", "/lib", "usr/lib", "system folder (a link)"),
    MountOp("symlink", "/lib64", "usr/lib64", "system folder (a link)"),
    MountOp("ro-bind", "/etc", "/etc", "system folder"),
]
PROC_DEV = [
    MountOp("proc", "/proc", reason="a fresh /proc"),
    MountOp("tmpfs", "/proc/1", reason="bwrap's pid 1, unfiltered: masked"),
    MountOp("dev", "/dev", reason="a minimal /dev"),
    MountOp("tmpfs", "/dev/shm", reason="shared memory of the sandbox's own", size=512 << 20,
            mode=0o1777),
]
FRESH_TMP = MountOp("tmpfs", "/tmp", reason="a fresh /tmp", size=1 << 30)
ROOT = [*SYSTEM, *PROC_DEV, FRESH_TMP]
INNER = MountOp("ro-bind", INNER_MOUNT, "/src/lnk/inner", "the inner confiner")
LATE = [MountOp("remount-ro", "/proc/1", reason="bwrap's pid 1, unfiltered: masked"),
        MountOp("remount-ro", "/", reason="nothing new at the root")]


def spec_grant(name: str, target: str | None, access: str, key: str, line: int = 2,
               **extra: bool) -> Grant:
    return Grant(name, target, access, key, key, line, **extra)  # type: ignore[arg-type]


def default_hides(**targets: str) -> list[Grant]:
    """The default hides with the given targets (by bare name: ssh=...), the rest missing."""
    found = []
    for name in credential_names("linux"):
        short = name.removeprefix("~/.").replace("/", "_").replace("-", "_")
        target = targets.get(short)
        found.append(Grant(name, target, "hide", CREDENTIALS, None, None,
                           is_dir=short not in ("netrc", "git_credentials")))
    return found


def settings(target: str | None = LNK) -> Grant:
    return Grant("$LNK_HOME", target, "hide", SETTINGS, None, None)


def snapshot(*grants: Grant, cwd: str = CWD, network: str = "none") -> Snapshot:
    return a_snapshot(*grants, source="spec.toml", home=HOME, cwd=cwd, lnk_home=LNK,
                      network_mode=network)


def ops(snap: Snapshot, layout: HostLayout = LAYOUT) -> list[MountOp]:
    return list(build_plan(linux_view(snap), layout, root_mode=False).ops)


# --- whole plans --------------------------------------------------------------------------


def test_the_default_spec() -> None:
    snap = snapshot(
        spec_grant(".", CWD, "write", "files.write[0]", 6),
        *default_hides(ssh=f"{HOME}/.ssh"),
        settings(),
        Grant("/src/lnk/.venv", "/src/lnk/.venv", "protect", INSTALLATION, None, None),
    )
    plan = build_plan(linux_view(snap), LAYOUT, root_mode=False)
    assert plan == LaunchPlan(
        ops=(
            *ROOT,
            MountOp("bind", CWD, CWD, "files.write[0]: ."),
            INNER,
            *LATE,
        ),
        chdir=CWD,
        root_mode=False,
        share_net=False,
        interpreter="/usr/bin/python3.11",
    )


def test_read_home_with_a_hidden_folder_and_a_write_grant_inside_it() -> None:
    snap = snapshot(
        spec_grant("~", HOME, "read", "files.read[0]"),
        spec_grant(".", CWD, "write", "files.write[0]", 3),
        spec_grant("~/.ssh/out", f"{HOME}/.ssh/out", "write", "files.write[1]", 3),
        spec_grant("~/.ssh", f"{HOME}/.ssh", "hide", "files.hide[0]", 4),
        *default_hides(netrc=f"{HOME}/.netrc"),
        settings(),
    )
    assert ops(snap) == [
        *ROOT,
        # Outer to inner: the hidden folder's ancestor is mounted before it is hidden...
        MountOp("ro-bind", HOME, HOME, "files.read[0]: ~"),
        MountOp("bind", CWD, CWD, "files.write[0]: ."),
        MountOp("tmpfs", f"{HOME}/.ssh", reason="files.hide[0]: ~/.ssh"),
        MountOp("hide-file", f"{HOME}/.netrc", reason=f"{CREDENTIALS}: ~/.netrc"),
        MountOp("tmpfs", LNK, reason=f"{SETTINGS}: $LNK_HOME"),
        # ...and the grant inside it after.
        MountOp("bind", f"{HOME}/.ssh/out", f"{HOME}/.ssh/out", "files.write[1]: ~/.ssh/out"),
        INNER,
        # Hidden folders and the root read-only last: bwrap made mount points in them.
        MountOp("remount-ro", f"{HOME}/.ssh", reason="hidden folder"),
        MountOp("remount-ro", LNK, reason="hidden folder"),
        *LATE,
    ]


def test_hides_outside_every_grant_need_no_mount() -> None:
    snap = snapshot(
        spec_grant("/srv", "/srv", "read", "files.read[0]"),
        *default_hides(ssh=f"{HOME}/.ssh", aws=f"{HOME}/.aws", netrc=f"{HOME}/.netrc"),
        settings(),
        Grant("/run/user/1000", "/run/user/1000", "hide", "agent sockets", None, None),
    )
    assert ops(snap) == [*ROOT, MountOp("ro-bind", "/srv", "/srv", "files.read[0]: /srv"),
                         INNER, *LATE]


def test_a_hide_inside_a_hidden_folder_is_covered_by_it() -> None:
    snap = snapshot(
        spec_grant("~", HOME, "read", "files.read[0]"),
        spec_grant("~/.config", f"{HOME}/.config", "hide", "files.hide[0]"),
        spec_grant("~/.config/app/key", f"{HOME}/.config/app/key", "hide", "files.hide[1]",
                   is_dir=False),
        spec_grant("~/.config/gh", f"{HOME}/.config/gh", "read", "files.read[1]"),
        spec_grant("~/.config/gh/token", f"{HOME}/.config/gh/token", "hide", "files.hide[2]",
                   is_dir=False),
    )
    assert ops(snap) == [
        *ROOT,
        MountOp("ro-bind", HOME, HOME, "files.read[0]: ~"),
        MountOp("tmpfs", f"{HOME}/.config", reason="files.hide[0]: ~/.config"),
        MountOp("ro-bind", f"{HOME}/.config/gh", f"{HOME}/.config/gh",
                "files.read[1]: ~/.config/gh"),
        MountOp("hide-file", f"{HOME}/.config/gh/token",
                reason="files.hide[2]: ~/.config/gh/token"),
        INNER,
        MountOp("remount-ro", f"{HOME}/.config", reason="hidden folder"),
        *LATE,
    ]
    assert build_plan(linux_view(snap), LAYOUT, root_mode=False).chdir == CWD


def test_tmp_granted_is_bound_instead_of_a_fresh_tmpfs() -> None:
    snap = snapshot(spec_grant("/tmp", "/tmp", "write", "files.write[0]"), cwd="/tmp")
    plan = build_plan(linux_view(snap), LAYOUT, root_mode=False)
    assert list(plan.ops) == [*SYSTEM, *PROC_DEV,
                              MountOp("bind", "/tmp", "/tmp", "files.write[0]: /tmp"),
                              INNER, *LATE]
    assert plan.chdir == "/tmp"


def test_a_grant_inside_tmp_is_bound_over_the_fresh_tmpfs() -> None:
    snap = snapshot(spec_grant("/tmp/w", "/tmp/w", "write", "files.write[0]"), cwd="/tmp/w")
    assert ops(snap) == [*ROOT, MountOp("bind", "/tmp/w", "/tmp/w", "files.write[0]: /tmp/w"),
                         INNER, *LATE]


def test_the_root_granted_replaces_the_system_folders() -> None:
    snap = snapshot(
        spec_grant("/", "/", "read", "files.read[0]"),
        spec_grant(".", CWD, "write", "files.write[0]"),
        *default_hides(ssh=f"{HOME}/.ssh"),
        settings(None),
    )
    assert ops(snap) == [
        MountOp("ro-bind", "/", "/", "files.read: /"),
        *ROOT[len(SYSTEM):],
        MountOp("bind", CWD, CWD, "files.write[0]: ."),
        MountOp("tmpfs", f"{HOME}/.ssh", reason=f"{CREDENTIALS}: ~/.ssh"),
        # The host's root is read-only: the inner's package goes in the fresh /dev.
        INNER._replace(dest="/dev/.lnk-sandbox/inner"),
        MountOp("remount-ro", f"{HOME}/.ssh", reason="hidden folder"),
        *LATE,
    ]


def test_a_granted_system_folder_is_mounted_once_by_its_grant() -> None:
    snap = snapshot(spec_grant("/etc", "/etc", "write", "files.write[0]"),
                    spec_grant("/usr/share/x", "/usr/share/x", "write", "files.write[1]"))
    assert ops(snap) == [
        *[op for op in SYSTEM if op.dest != "/etc"],
        *PROC_DEV, FRESH_TMP,
        MountOp("bind", "/etc", "/etc", "files.write[0]: /etc"),
        MountOp("bind", "/usr/share/x", "/usr/share/x", "files.write[1]: /usr/share/x"),
        INNER, *LATE,
    ]


def test_system_folders_keep_the_layouts_order_and_links() -> None:
    layout = HostLayout(system={"/usr": None, "/lib32": "usr/lib32", "/opt": None},
                        inner_source="/i", interpreter="/usr/bin/python3",
                        interpreter_prefix="/usr")
    assert ops(snapshot(), layout) == [
        MountOp("ro-bind", "/usr", "/usr", "system folder"),
        MountOp("symlink", "/lib32", "usr/lib32", "system folder (a link)"),
        MountOp("ro-bind", "/opt", "/opt", "system folder"),
        *PROC_DEV, FRESH_TMP,
        MountOp("ro-bind", INNER_MOUNT, "/i", "the inner confiner"),
        *LATE,
    ]
    assert build_plan(linux_view(snapshot()), layout, root_mode=False).chdir == "/"


def test_the_installation_is_protected_only_inside_a_write_grant() -> None:
    snap = snapshot(
        spec_grant("~", HOME, "read", "files.read[0]"),
        spec_grant(".", CWD, "write", "files.write[0]"),
        settings(),
        Grant(f"{CWD}/.venv", f"{CWD}/.venv", "protect", INSTALLATION, None, None),
        Grant(f"{CWD}/supervisor", f"{CWD}/supervisor", "protect", INSTALLATION, None, None),
        Grant("/usr/lib/python3", "/usr/lib/python3", "protect", INSTALLATION, None, None),
        Grant(f"{HOME}/tools", f"{HOME}/tools", "protect", INSTALLATION, None, None),
        Grant(f"{LNK}/venv", f"{LNK}/venv", "protect", INSTALLATION, None, None),
        Grant("/opt/lnk", "/opt/lnk", "protect", INSTALLATION, None, None),
        Grant("/gone", None, "protect", INSTALLATION, None, None),
    )
    assert ops(snap) == [
        *ROOT,
        MountOp("ro-bind", HOME, HOME, "files.read[0]: ~"),
        MountOp("bind", CWD, CWD, "files.write[0]: ."),
        MountOp("tmpfs", LNK, reason=f"{SETTINGS}: $LNK_HOME"),
        MountOp("ro-bind", f"{CWD}/.venv", f"{CWD}/.venv", f"{INSTALLATION}: {CWD}/.venv"),
        MountOp("ro-bind", f"{CWD}/supervisor", f"{CWD}/supervisor",
                f"{INSTALLATION}: {CWD}/supervisor"),
        INNER,
        MountOp("remount-ro", LNK, reason="hidden folder"),
        *LATE,
    ]


def test_an_installation_that_is_the_write_grant_itself_is_read_only() -> None:
    snap = snapshot(spec_grant("~/venv", f"{HOME}/venv", "write", "files.write[0]"),
                    Grant(f"{HOME}/venv", f"{HOME}/venv", "protect", INSTALLATION, None, None))
    assert ops(snap)[len(ROOT):-3] == [
        MountOp("bind", f"{HOME}/venv", f"{HOME}/venv", "files.write[0]: ~/venv"),
        MountOp("ro-bind", f"{HOME}/venv", f"{HOME}/venv", f"{INSTALLATION}: {HOME}/venv"),
    ]


OPT_PYTHON = HostLayout(system=LAYOUT.system, inner_source="/src/lnk/inner",
                        interpreter="/opt/py/bin/python3.11", interpreter_prefix="/opt/py")
PREFIX = MountOp("ro-bind", "/opt/py", "/opt/py", "the inner confiner's interpreter")


def test_the_interpreter_prefix_is_mounted_when_not_visible() -> None:
    assert ops(snapshot(), OPT_PYTHON) == [*ROOT, INNER, PREFIX, *LATE]


def test_the_interpreter_prefix_is_not_mounted_when_visible() -> None:
    snap = snapshot(spec_grant("/opt", "/opt", "read", "files.read[0]"))
    assert ops(snap, OPT_PYTHON) == [
        *ROOT, MountOp("ro-bind", "/opt", "/opt", "files.read[0]: /opt"), INNER, *LATE]
    # The system /usr holds the default layout's interpreter: nothing to add there.
    assert PREFIX not in ops(snapshot()) and INNER in ops(snapshot())


def test_the_interpreter_prefix_is_mounted_when_hidden() -> None:
    snap = snapshot(spec_grant("/opt", "/opt", "read", "files.read[0]"),
                    spec_grant("/opt/py", "/opt/py", "hide", "files.hide[0]"))
    assert ops(snap, OPT_PYTHON) == [
        *ROOT,
        MountOp("ro-bind", "/opt", "/opt", "files.read[0]: /opt"),
        MountOp("tmpfs", "/opt/py", reason="files.hide[0]: /opt/py"),
        INNER,
        PREFIX,
        MountOp("remount-ro", "/opt/py", reason="hidden folder"),
        *LATE,
    ]


def test_the_compiled_inner_needs_no_interpreter_inside() -> None:
    """A static program: neither the interpreter's prefix nor a C library is mounted for
    it, hidden or not; its package's folder is, as for the Python inner."""
    compiled = OPT_PYTHON._replace(compiled_inner=True)
    assert ops(snapshot(), compiled) == [*ROOT, INNER, *LATE]
    snap = snapshot(spec_grant("/opt", "/opt", "read", "files.read[0]"),
                    spec_grant("/opt/py", "/opt/py", "hide", "files.hide[0]"))
    assert PREFIX not in ops(snap, compiled) and INNER in ops(snap, compiled)


def test_the_interpreter_outside_a_visible_prefix_still_gets_the_prefix() -> None:
    layout = HostLayout(system=LAYOUT.system, inner_source="/src/lnk/inner",
                        interpreter="/opt/bin/python3", interpreter_prefix="/usr")
    assert ops(snapshot(), layout)[-3] == MountOp("ro-bind", "/usr", "/usr",
                                                  "the inner confiner's interpreter")


def test_a_name_through_a_link_becomes_that_link() -> None:
    snap = snapshot(spec_grant("~/link", "/data/d", "read", "files.read[0]"),
                    spec_grant("~/link/sub", "/data/d/sub", "write", "files.write[0]"),
                    spec_grant("~/w", "/data/w", "write", "files.write[1]"))
    assert ops(snap) == [
        *ROOT,
        MountOp("ro-bind", "/data/d", "/data/d", "files.read[0]: ~/link"),
        MountOp("bind", "/data/w", "/data/w", "files.write[1]: ~/w"),
        MountOp("bind", "/data/d/sub", "/data/d/sub", "files.write[0]: ~/link/sub"),
        INNER,
        # ~/link/sub is reached through ~/link: one link, not a second one below it.
        MountOp("symlink", f"{HOME}/link", "/data/d", "~/link is a link"),
        MountOp("symlink", f"{HOME}/w", "/data/w", "~/w is a link"),
        *LATE,
    ]


def test_a_link_name_inside_a_visible_grant_needs_no_symlink() -> None:
    snap = snapshot(spec_grant("~", HOME, "read", "files.read[0]"),
                    spec_grant("/lib/x", "/usr/lib/x", "read", "files.read[1]"),
                    spec_grant("~/data", "/srv/data", "read", "files.read[2]"))
    # ~/data is a link inside the home grant: it shows itself; /lib is a link inside.
    assert ops(snap) == [
        *ROOT,
        MountOp("ro-bind", HOME, HOME, "files.read[0]: ~"),
        MountOp("ro-bind", "/srv/data", "/srv/data", "files.read[2]: ~/data"),
        MountOp("ro-bind", "/usr/lib/x", "/usr/lib/x", "files.read[1]: /lib/x"),
        INNER,
        *LATE,
    ]


def test_missing_optional_grants_are_left_out() -> None:
    snap = snapshot(spec_grant("~/nope", None, "read", "files.read[0]"),
                    spec_grant(".", CWD, "write", "files.write[0]"))
    assert ops(snap) == [*ROOT, MountOp("bind", CWD, CWD, "files.write[0]: ."), INNER, *LATE]


@pytest.mark.parametrize(
    ("grants", "cwd", "chdir"),
    [
        ((), CWD, "/"),
        ((spec_grant("~", HOME, "read", "files.read[0]"),), CWD, CWD),
        ((spec_grant("~", HOME, "read", "files.read[0]"),
          spec_grant("~/.ssh", f"{HOME}/.ssh", "hide", "files.hide[0]")), f"{HOME}/.ssh/x", "/"),
        ((), "/tmp/x", "/"),
        ((), "/usr/share", "/usr/share"),
    ],
)
def test_chdir_only_into_a_visible_working_directory(
    grants: tuple[Grant, ...], cwd: str, chdir: str
) -> None:
    plan = build_plan(linux_view(snapshot(*grants, cwd=cwd)), LAYOUT, root_mode=False)
    assert plan.chdir == chdir


@pytest.mark.parametrize(("mode", "shared"), [("none", False), ("proxy", False), ("host", True)])
def test_only_host_mode_shares_the_network(mode: str, shared: bool) -> None:
    plan = build_plan(linux_view(snapshot(network=mode)), LAYOUT, root_mode=True)
    assert plan.share_net is shared


def test_root_mode_is_carried() -> None:
    assert build_plan(linux_view(snapshot()), LAYOUT, root_mode=True).root_mode is True
    assert build_plan(linux_view(snapshot()), LAYOUT, root_mode=False).root_mode is False


# --- from a spec on real folders, through the resolver --------------------------------------


def test_a_resolved_spec_on_a_real_tree(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    home, data = root / "home", root / "data"
    for folder in (home / "proj", home / ".ssh" / "out", home / ".lnk", data / "sub"):
        folder.mkdir(parents=True)
    (home / "link").symlink_to(data)
    (home / ".netrc").write_text("")
    spec = parse_spec(b'[files]\nread = ["~/link"]\nwrite = [".", "~/link/sub"]\n',
                      "spec.toml")
    context = Context(home=str(home), cwd=str(home / "proj"), lnk_home=str(home / ".lnk"),
                      uid=0, runtime_dir=None, installation=(str(home / "proj" / ".venv"),))
    (home / "proj" / ".venv").mkdir()
    snap = resolve(effective_policy(spec, context), context)
    assert ops(snap) == [
        *ROOT,
        MountOp("ro-bind", str(data), str(data), "files.read[0]: ~/link"),
        MountOp("bind", str(home / "proj"), str(home / "proj"), "files.write[0]: ."),
        MountOp("bind", str(data / "sub"), str(data / "sub"), "files.write[1]: ~/link/sub"),
        MountOp("ro-bind", str(home / "proj" / ".venv"), str(home / "proj" / ".venv"),
                f"{INSTALLATION}: {home}/proj/.venv"),
        INNER,
        MountOp("symlink", str(home / "link"), str(data), "~/link is a link"),
        *LATE,
    ]


def test_the_default_spec_through_the_resolver(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    proj = root / "home" / "proj"
    proj.mkdir(parents=True)
    context = Context(home=str(root / "home"), cwd=str(proj), lnk_home=str(root / "home/.lnk"),
                      uid=0, runtime_dir=None, installation=())
    snap = resolve(effective_policy(load_spec(None), context), context)
    assert ops(snap) == [*ROOT, MountOp("bind", str(proj), str(proj), "files.write[0]: ."),
                         INNER, *LATE]


def test_probe_reads_the_machines_system_folders() -> None:
    layout = HostLayout.probe("/i", "/usr/bin/python3", "/usr")
    assert list(layout.system) == [f for f in SYSTEM_FOLDERS if f in layout.system]
    for folder, link in layout.system.items():
        if link is None:
            assert os.path.isdir(folder) and not os.path.islink(folder)
        else:
            assert os.readlink(folder) == link
    for folder in set(SYSTEM_FOLDERS) - set(layout.system):
        assert not os.path.isdir(folder)
    assert "/usr" in layout.system
    assert (layout.inner_source, layout.interpreter, layout.interpreter_prefix) == (
        "/i", "/usr/bin/python3", "/usr")


# --- bwrap's arguments --------------------------------------------------------------------


INFO = BwrapInfo("/usr/bin/bwrap", "0.8.0", bind_fd=True, disable_userns=True)


def fd_of(op: MountOp) -> str:
    return f"<{op.dest}>"


def test_bwrap_arguments_exactly() -> None:
    snap = snapshot(
        spec_grant("~", HOME, "read", "files.read[0]"),
        spec_grant(".", CWD, "write", "files.write[0]"),
        spec_grant("~/.ssh", f"{HOME}/.ssh", "hide", "files.hide[0]"),
        spec_grant("~/.netrc", f"{HOME}/.netrc", "hide", "files.hide[1]", is_dir=False),
    )
    plan = build_plan(linux_view(snap), LAYOUT, root_mode=True)
    assert bwrap_args(plan, INFO, fd_of=fd_of, json_status_fd="7", config_fd="9") == [
        "/usr/bin/bwrap",
        "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--die-with-parent", "--cap-drop", "ALL",
        "--uid", "0", "--gid", "0",  # root mode: uid 0 inside, SANDBOX_UID outside
        "--unshare-net", "--disable-userns",
        "--ro-bind-fd", "</usr>", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/sbin", "/sbin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--ro-bind-fd", "</etc>", "/etc",
        "--proc", "/proc",
        "--tmpfs", "/proc/1",
        "--dev", "/dev",
        "--size", str(512 << 20), "--perms", "1777", "--tmpfs", "/dev/shm",
        "--size", str(1 << 30), "--tmpfs", "/tmp",
        "--ro-bind-fd", f"<{HOME}>", HOME,
        "--bind-fd", f"<{CWD}>", CWD,
        "--tmpfs", f"{HOME}/.ssh",
        "--ro-bind-data", f"<{HOME}/.netrc>", f"{HOME}/.netrc",
        "--ro-bind-fd", f"<{INNER_MOUNT}>", INNER_MOUNT,
        "--remount-ro", f"{HOME}/.ssh",
        "--remount-ro", "/proc/1",
        "--remount-ro", "/",
        "--chdir", CWD,
        "--json-status-fd", "7",
        "--", "/usr/bin/python3.11", "-I", "-S", "-c", INNER_BOOT, "9",
    ]


def test_bwrap_arguments_for_a_shared_network_and_an_older_bwrap() -> None:
    plan = build_plan(linux_view(snapshot(network="host")), LAYOUT, root_mode=False)
    info = BwrapInfo("bwrap", "0.8.0", bind_fd=True, disable_userns=False)
    args = bwrap_args(plan, info, fd_of=fd_of, json_status_fd="3", config_fd="4")
    assert "--unshare-net" not in args
    assert "--disable-userns" not in args
    # Root mode or not, the sandbox takes its own user namespace and drops every capability.
    assert args[1:9] == ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                         "--unshare-cgroup-try", "--die-with-parent", "--cap-drop", "ALL"]


def test_bwrap_runs_the_compiled_inner_from_its_packages_mount() -> None:
    for layout, parent in ((LAYOUT, "/run/lnk-sandbox"), (OPT_PYTHON, "/run/lnk-sandbox")):
        plan = build_plan(linux_view(snapshot()), layout._replace(compiled_inner=True),
                          root_mode=False)
        args = bwrap_args(plan, INFO, fd_of=fd_of, json_status_fd="7", config_fd="9")
        assert args[args.index("--"):] == ["--", f"{parent}/inner/confine", "9"]
    # With `/` granted the package is under the sandbox's own /dev, and so is the program.
    plan = build_plan(linux_view(PLANS["root"]), LAYOUT._replace(compiled_inner=True),
                      root_mode=False)
    args = bwrap_args(plan, INFO, fd_of=fd_of, json_status_fd="7", config_fd="9")
    assert args[-2:] == ["/dev/.lnk-sandbox/inner/confine", "9"]


def test_the_inner_boot_line_imports_from_the_fixed_path() -> None:
    assert INNER_BOOT == ("import sys;sys.path.insert(0,'/run/lnk-sandbox');"
                          "from inner.main import main;main(int(sys.argv[1]))")


PLANS = {
    "default": snapshot(spec_grant(".", CWD, "write", "files.write[0]"), settings()),
    "home": snapshot(spec_grant("~", HOME, "read", "files.read[0]"),
                     spec_grant("~/.ssh", f"{HOME}/.ssh", "hide", "files.hide[0]"),
                     spec_grant("~/.ssh/o", f"{HOME}/.ssh/o", "write", "files.write[0]")),
    "root": snapshot(spec_grant("/", "/", "read", "files.read[0]"),
                     spec_grant("/tmp", "/tmp", "write", "files.write[0]")),
    "links": snapshot(spec_grant("~/l", "/data/d", "write", "files.write[0]")),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_no_grant_is_ever_bound_by_path(name: str) -> None:
    plan = build_plan(linux_view(PLANS[name]), OPT_PYTHON, root_mode=False)
    args = bwrap_args(plan, INFO, fd_of=fd_of, json_status_fd="3", config_fd="4")
    assert not {"--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try"} & set(args)
    binds = [op for op in plan.ops if op.kind in ("bind", "ro-bind")]
    assert binds
    for op in binds:
        at = args.index(op.dest, args.index(fd_of(op)))
        assert args[at - 2] == ("--bind-fd" if op.kind == "bind" else "--ro-bind-fd")


def test_host_access_follows_the_deepest_mount() -> None:
    from supervisor.linux.plan import LaunchPlan, host_access

    plan = LaunchPlan(ops=(
        MountOp("ro-bind", "/usr", "/usr"),
        MountOp("tmpfs", "/tmp"),
        MountOp("bind", "/tmp/proj", "/tmp/proj"),
        MountOp("tmpfs", "/tmp/proj/.ssh"),
        MountOp("ro-bind", "/tmp/proj/.git", "/tmp/proj/.git"),
        MountOp("ro-bind", "/run/lnk-sandbox/inner", "/src/inner"),
    ), chdir="/", root_mode=False, share_net=False, interpreter="/usr/bin/python3")
    assert host_access(plan, "/usr/bin/true") == "read"
    assert host_access(plan, "/tmp/other") is None  # a fresh /tmp
    assert host_access(plan, "/tmp/proj/src/x") == "write"
    assert host_access(plan, "/tmp/proj/.ssh/id") is None  # hidden
    assert host_access(plan, "/tmp/proj/.git/config") == "read"
    assert host_access(plan, "/run/lnk-sandbox/inner/main.py") is None  # not the host's
    assert host_access(plan, "/home/u") is None


def test_root_mode_maps_what_the_sandbox_writes_and_files_named_for_reading() -> None:
    """Run by root the sandbox is another uid: the binds it must see as root's own are
    idmapped (every grant and what is bound inside one, a regular file a read grant
    names); the system folders and the inner's package are never mapped."""
    snap = snapshot(
        spec_grant(".", CWD, "write", "files.write[0]"),
        spec_grant("./vendor", f"{CWD}/vendor", "read", "files.read[0]"),
        spec_grant("/srv/data", "/srv/data", "read", "files.read[1]"),
        spec_grant("/etc/shadow", "/etc/shadow", "read", "files.read[2]", is_dir=False),
    )
    plan = build_plan(linux_view(snap), LAYOUT, root_mode=True)
    mapped = {op.dest for op in plan.ops if op.idmapped}
    assert mapped == {CWD, f"{CWD}/vendor", "/srv/data", "/etc/shadow"}
    assert not build_plan(linux_view(snap), LAYOUT, root_mode=False).ops[-1].idmapped
    assert not any(op.idmapped for op in build_plan(linux_view(snap), LAYOUT, root_mode=False).ops)
