"""The macOS profile: snapshots compiled to SBPL, compared with golden files read line by
line, and its parts checked exactly (no Mac, no privileges: text only).

Goldens live in tests/golden/macos/; `LNK_UPDATE_GOLDEN=1` rewrites them, and the diff
is then reviewed like code. Each was reviewed for rule order: an allow follows a deny
only where it brings the spec's own folder back (a grant inside a hidden folder, an
agent's own folder in `$LNK_HOME`, and the metadata of the folders above them).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from supervisor.dotfiles import Protected
from supervisor.errors import LaunchError
from supervisor.grants import Grant, Program, Snapshot
from supervisor.macos import system
from supervisor.macos.profile import (
    FOLD_AT,
    KEEP_OPS,
    REGEX_LIMIT,
    SANDBOX_EXEC,
    MacHost,
    compile_profile,
    fold,
    regex_escape,
    sandbox_exec_argv,
)
from supervisor.macos.programs import Companion
from supervisor.policy import credential_names
from support.snapshots import a_snapshot
from support.views import mac_view

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "macos"
HOME = "/Users/me"
CWD = "/Users/me/proj"
LNK = "/Users/me/.lnk"
TEMP = "/private/var/folders/zz/abc/T/lnk-sandbox-1"
HOST = MacHost(home=HOME, temp=TEMP)
# What a launch finds on a Mac (run.py's mac_host): macOS's own hides below home and
# Homebrew's, the command's terminal, the stand-ins listed programs run.
MAC_HIDES = (
    (f"{HOME}/Library", "macOS default hide: what applications keep"),
    (f"{HOME}/.colima", "macOS default hide: a container engine's sockets and keys"),
    ("/opt/homebrew/etc/homebrew", "macOS default hide: Homebrew's settings"),
)
CLT_GIT = "/Library/Developer/CommandLineTools/usr/bin/git"
PYTHON_APP = ("/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/Versions/"
              "3.12/Resources/Python.app/Contents/MacOS/Python")
COMPANIONS = (Companion(0, CLT_GIT, "/usr/bin/git is an xcrun stub"),
              Companion(2, PYTHON_APP, "a framework build's python runs its Python.app"),
              Companion(4, "/bin/bash", "/bin/sh runs the shell /private/var/select/sh names"))
CREDENTIALS = "default hide: credentials"
SETTINGS = "lnk-sandbox's settings ($LNK_HOME)"
INSTALLATION = "the installation running lnk-sandbox"
PRESENT = {"~/.ssh": True, "~/.aws": True, "~/.netrc": False}  # name -> is a folder


def spec_grant(name: str, target: str | None, access: str, key: str, **extra: bool) -> Grant:
    return Grant(name, target, access, key, key, 3, **extra)  # type: ignore[arg-type]


def defaults(*, lnk: str | None = LNK) -> list[Grant]:
    """What effective_policy adds on a Mac: the default hides (three present), $LNK_HOME
    and the installation (a venv in home, and Homebrew's Python)."""
    found = []
    for name in credential_names("darwin"):
        target = HOME + name[1:] if name in PRESENT else None
        found.append(Grant(name, target, "hide", CREDENTIALS, None, None,
                           is_dir=PRESENT.get(name, True)))
    found.append(Grant("$LNK_HOME", lnk, "hide", SETTINGS, None, None))
    found.append(Grant("/Users/me/.local/lnk", "/Users/me/.local/lnk", "protect",
                       INSTALLATION, None, None))
    found.append(Grant("/opt/homebrew/opt/python@3.12", "/opt/homebrew/Cellar/python@3.12",
                       "protect", INSTALLATION, None, None))
    return found


def snapshot(*grants: Grant, programs: tuple[Program, ...] | None = None,
             network: str = "none", agent: str | None = None) -> Snapshot:
    return a_snapshot(*grants, *defaults(), source="spec.toml", home=HOME, cwd=CWD,
                      lnk_home=LNK, uid=501, programs=programs, network_mode=network,
                      agent=agent)


def dot_files(top: str, *, git: bool = True) -> list[Protected]:
    """What dotfiles.analyze finds at the top of a plain repository (or a folder)."""
    reason = "runs as you"
    found = [Protected(f"{top}/.git", f"{top}/.git", "folder", git, f".git: {reason}"),
             Protected(f"{top}/.envrc", f"{top}/.envrc", "file", False, f"direnv: {reason}")]
    for name in (".vscode", ".idea", ".husky"):
        found.append(Protected(f"{top}/{name}", f"{top}/{name}", "folder", name == ".vscode",
                               f"{name}: {reason}", placeholder=f"{top}/{name}"))
    return found


WRITE_CWD = spec_grant(".", CWD, "write", "files.write[0]")

SPECS = {
    # [files] write = ["."]: the embedded default.
    "default": (snapshot(WRITE_CWD), dot_files(CWD), HOST, False),
    # read = ["~"], write = ["."], hide = ["~/.config"], read = ["~/.config/nvim"],
    # agent = "reviewer": every agent's folder hidden with $LNK_HOME, this one's reopened.
    "home-hides-agent": (
        snapshot(
            spec_grant("~", HOME, "read", "files.read[0]"),
            spec_grant("~/.config/nvim", HOME + "/.config/nvim", "read", "files.read[1]"),
            WRITE_CWD,
            spec_grant("~/.config", HOME + "/.config", "hide", "files.hide[0]"),
            Grant("$LNK_HOME/agents/reviewer", LNK + "/agents/reviewer", "write",
                  "the agent 'reviewer''s own folder", None, None, True),
            agent="reviewer",
        ),
        dot_files(CWD), replace(HOST, hides=MAC_HIDES, terminals=("/dev/ttys003",)), False),
    # programs = ["git", "/usr/bin/make", "python3", "~/bin/tool", "/bin/sh"]: ~/bin/tool
    # hidden; git an xcrun stub; python3 a framework build; /bin/sh runs bash. The
    # developer folder is outside what the sandbox sees, so it is made readable.
    "programs": (
        snapshot(WRITE_CWD, programs=(
            Program("git", "/usr/bin/git"),
            Program("/usr/bin/make", "/usr/bin/make"),
            Program("python3", "/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/"
                    "Python.framework/Versions/3.12/bin/python3.12"),
            Program("~/bin/tool", HOME + "/bin/tool"),
            Program("/bin/sh", "/bin/sh"),
        )),
        dot_files(CWD), replace(HOST, companions=COMPANIONS,
                                developer_dir="/Volumes/Xcode/Xcode.app/Contents/Developer"),
        False),
    "no-programs": (snapshot(WRITE_CWD, programs=()), dot_files(CWD), HOST, False),
    "network-proxy": (snapshot(WRITE_CWD, network="proxy"), dot_files(CWD),
                      replace(HOST, proxy_ports=(3128, 1080)), False),
    "network-proxy-unavailable": (snapshot(WRITE_CWD, network="proxy"), dot_files(CWD),
                                  HOST, False),
    "network-host": (snapshot(WRITE_CWD, network="host"), dot_files(CWD), HOST, False),
    # write = [".", "~/notes"], write_dot_files = ["."]; ~/notes is a link to a volume.
    "write-dot-files": (
        snapshot(
            spec_grant(".", CWD, "write", "files.write[0]", dot_files_writable=True),
            spec_grant("~/notes", "/Volumes/Data/notes", "write", "files.write[1]"),
        ),
        dot_files("/Volumes/Data/notes", git=False), HOST, False),
    "learn": (snapshot(WRITE_CWD), dot_files(CWD), HOST, True),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_profile_matches_its_golden_file(name: str) -> None:
    snap, protected, host, learn = SPECS[name]
    listing = compile_profile(mac_view(snap, protected), host, learn=learn).listing()
    path = GOLDEN / f"{name}.sb"
    if os.environ.get("LNK_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(listing)
    assert listing == path.read_text(), f"{path} differs (LNK_UPDATE_GOLDEN=1 rewrites it)"


def test_the_goldens_are_all_used() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.sb")) == sorted(SPECS)


# -- the text, read as rules -------------------------------------------------------------


def rules(text: str) -> list[str]:
    """Each rule of a profile on one line, comments dropped."""
    joined: list[str] = []
    depth = 0
    for line in text.splitlines():
        code = line.split(";", 1)[0].strip() if not line.lstrip().startswith(";") else ""
        if not code:
            continue
        if depth:
            joined[-1] += " " + code
        else:
            joined.append(code)
        depth += code.count("(") - code.count(")")
    return joined


def test_no_path_of_the_snapshot_is_in_the_text() -> None:
    """Every string of the rules is a parameter's name or a constant of system.py; no
    path of the snapshot or the machine is anywhere in the text, comments included."""
    for name, (snap, protected, host, learn) in SPECS.items():
        profile = compile_profile(mac_view(snap, protected), host, learn=learn)
        strings = {s for rule in rules(profile.text) for s in re.findall(r'"([^"]*)"', rule)}
        names = {param for param, _ in profile.parameters}
        for string in strings - names:
            assert not string.startswith(("/Users", "/Volumes", "/private/var/folders")), name
        for param, value in profile.parameters:
            assert f'"{value}"' not in profile.text and value not in strings, (name, param)
        for prefix in (HOME, "/Volumes", TEMP):
            assert prefix not in profile.text, (name, prefix)
        assert all(" " <= c <= "~" for line in profile.text.splitlines() for c in line)


def test_every_parameter_is_read_and_every_read_is_a_parameter() -> None:
    for snap, protected, host, learn in SPECS.values():
        profile = compile_profile(mac_view(snap, protected), host, learn=learn)
        read = set(re.findall(r'\(param "([A-Z0-9_]+)"\)', profile.text))
        assert read == {name for name, _ in profile.parameters}


def test_sandbox_exec_gets_the_profile_and_parameters_then_the_command() -> None:
    snap, protected, host, _ = SPECS["default"]
    profile = compile_profile(mac_view(snap, protected), host)
    argv = sandbox_exec_argv(profile, ["make", "-j", "--", "x"])
    assert argv[:3] == [SANDBOX_EXEC, "-p", profile.text]
    assert argv[3:-5] == [f"-D{n}={v}" for n, v in profile.parameters]
    assert argv[-5:] == ["--", "make", "-j", "--", "x"]
    assert SANDBOX_EXEC == "/usr/bin/sandbox-exec"


def test_a_path_with_a_newline_stays_a_parameter() -> None:
    odd = CWD + '/x\n(allow default)"'
    snap = snapshot(spec_grant("./x", odd, "write", "files.write[0]"))
    profile = compile_profile(mac_view(snap, []), HOST)
    assert "(allow default)" not in profile.text
    assert ("WRITE_0", odd) in profile.parameters
    assert f"-DWRITE_0={odd}" in profile.arguments()


# -- the Keychain, named IPC, the order of what is always closed -------------------------


def test_the_keychain_is_closed_last_and_named_ipc_by_the_operations_defaults() -> None:
    for snap, protected, host, learn in SPECS.values():
        text = rules(compile_profile(mac_view(snap, protected), host, learn=learn).text)
        keychain = [i for i, r in enumerate(text) if 'KEYCHAINS_0' in r]
        assert keychain == [len(text) - 1]
        assert text[-1].startswith("(deny file-read* ") and "KEYCHAINS_CASE_0" in text[-1]
        assert text[-2].startswith("(deny mach-lookup")
        for service in system.KEYCHAIN_SERVICES:
            assert f'(global-name "{service}")' in text[-2]
        allowed = " ".join(r for r in text if r.startswith("(allow"))
        for service in system.KEYCHAIN_SERVICES:
            assert f'"{service}"' not in allowed
        # Unfiltered rules are the operations' defaults, so where they stand changes
        # nothing; the only filtered ipc allow is a semaphore of the sandbox's own.
        assert "(deny ipc-posix-shm)" in text and "(deny ipc-posix-sem)" in text
        ipc = [r for r in text if r.startswith("(allow ipc")]
        assert ipc == ["(allow ipc-posix-sem (semaphore-owner same-sandbox))"]


def test_what_deny_default_does_not_reach_is_denied_right_after_it() -> None:
    """process-info*, nvram* and iokit-get-properties have a default of their own, allow:
    the text right after (deny default) denies them, then reopens only the sandbox's
    own processes; setuid bits and hard links get a default no filtered rule lifts."""
    for snap, protected, host, learn in SPECS.values():
        text = rules(compile_profile(mac_view(snap, protected), host, learn=learn).text)
        assert text[:3] == ["(version 1)", "(deny default)",
                            "(deny process-info* nvram* iokit-get-properties)"]
        info = [i for i, r in enumerate(text) if r.startswith("(allow process-info*")]
        assert info and text[info[0]] == "(allow process-info* (target same-sandbox))"
        assert all(i > 2 for i in info)
        assert not any("process-info" in r or "nvram" in r or "iokit" in r
                       for r in text[3:] if r != text[info[0]])
        for op in ("file-write-setugid", "file-link"):
            assert f"(deny {op})" in text
            assert not any(op in r for r in text if r != f"(deny {op})")


def test_the_keychains_parameter_is_below_the_resolved_home() -> None:
    snap, protected, _, _ = SPECS["default"]
    profile = compile_profile(mac_view(snap, protected),
                              MacHost(home="/System/Volumes/Data/Users/me"))
    assert ("KEYCHAINS_0", "/System/Volumes/Data/Users/me/Library/Keychains") in \
        profile.parameters


# -- [commands] ----------------------------------------------------------------------------


def exec_rules(text: str) -> list[str]:
    return [r for r in rules(text) if "process-exec" in r]


def test_absent_programs_run_where_files_are_seen_and_not_where_hidden() -> None:
    snap, protected, host, _ = SPECS["home-hides-agent"]
    text = rules(compile_profile(mac_view(snap, protected), host).text)
    allows = [r for r in text if r.startswith("(allow process-exec*")]
    assert allows[0].startswith('(allow process-exec* (subpath "/System")')
    assert not any(r == "(allow process-exec*)" for r in text)  # never anywhere at all
    hides = [i for i, r in enumerate(text) if r.startswith("(deny") and "HIDE_" in r]
    assert hides and all("process-exec*" in text[i] for i in hides)
    reopened = [i for i, r in enumerate(allows) if "WRITE_2" in r or "READ_1" in r]
    assert reopened, "the agent's own folder and ~/.config/nvim run programs again"


def test_a_program_list_allows_those_files_and_no_other_exec() -> None:
    snap, protected, _, _ = SPECS["programs"]
    profile = compile_profile(mac_view(snap, protected), HOST)  # no stubs found on this host
    text = exec_rules(profile.text)
    assert len(text) == 1
    params = dict(profile.parameters)
    listed = re.findall(r'\(literal \(param "(PROGRAM_\d+)"\)\)', text[0])
    assert [params[p] for p in listed] == [
        "/usr/bin/git", "/usr/bin/make",
        "/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/Versions/3.12/"
        "bin/python3.12", "/bin/sh"]
    assert profile.notes == (f"~/bin/tool ({HOME}/bin/tool) is hidden from the sandbox, so "
                             "it cannot run there",)


def test_an_empty_program_list_allows_no_exec_at_all() -> None:
    snap, protected, host, _ = SPECS["no-programs"]
    assert exec_rules(compile_profile(mac_view(snap, protected), host).text) == []


def test_learn_reports_every_exec_it_allows() -> None:
    snap, protected, host, _ = SPECS["programs"]
    text = exec_rules(compile_profile(mac_view(snap, protected), host, learn=True).text)
    allows = [r for r in text if r.startswith("(allow")]
    assert allows and all(r.endswith("(with report))") for r in allows)
    assert not any("PROGRAM_" in r for r in text)


# -- network ---------------------------------------------------------------------------


def network_rules(name: str) -> list[str]:
    snap, protected, host, learn = SPECS[name]
    text = rules(compile_profile(mac_view(snap, protected), host, learn=learn).text)
    return [r for r in text if re.match(r"\((allow|deny) (network\S*|system-socket)[ )]", r)]


def test_network_none_and_an_unavailable_proxy_allow_no_address() -> None:
    for name in ("default", "network-proxy-unavailable"):
        assert network_rules(name) == ["(allow system-socket (socket-domain AF_UNIX))"]


def test_network_proxy_allows_only_the_proxy_ports_on_localhost() -> None:
    assert network_rules("network-proxy") == [
        "(allow system-socket (socket-domain AF_UNIX))",
        "(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6))",
        '(allow network-outbound (remote ip "localhost:3128") (remote ip "localhost:1080"))',
    ]


def test_network_host_opens_addresses_but_not_every_path_socket() -> None:
    found = network_rules("network-host")
    assert '(allow network-outbound (remote ip "*:*"))' in found
    assert f'(allow network-outbound (literal "{system.MDNSRESPONDER}"))' in found
    assert "(allow network*)" not in found and "(allow network-outbound)" not in found


# -- folding -----------------------------------------------------------------------------


def test_fold_keeps_each_regex_within_the_limit_and_matches_exactly() -> None:
    paths = [f"/Users/me/p{i:03d}/.git (x)+[y]" for i in range(60)]
    regexes, alone = fold(paths, subpath=True)
    assert alone == [] and len(regexes) > 1
    assert all(len(r.encode()) <= REGEX_LIMIT for r in regexes)
    for path in paths:
        assert sum(bool(re.fullmatch(r, path)) for r in regexes) == 1
        assert any(re.fullmatch(r, path + "/hooks/pre-commit") for r in regexes)
        assert not any(re.fullmatch(r, path + "x") for r in regexes)
    literal, _ = fold(paths, subpath=False)
    assert not any(re.fullmatch(r, paths[0] + "/a") for r in literal)


def test_fold_leaves_out_what_cannot_fit_and_the_root() -> None:
    long = "/" + "a" * (REGEX_LIMIT + 10)
    regexes, alone = fold(["/", long, "/b"], subpath=True)
    assert alone == ["/", long] and regexes == ["^(/b)(/.*)?$"]


def test_regex_escape_quotes_every_metacharacter() -> None:
    path = r"/a.b[c](d)*e+f?g{h}|i^j$k\l"
    assert re.fullmatch(regex_escape(path), path)
    assert not re.fullmatch(regex_escape("/a.b"), "/axb")


def test_a_long_program_list_is_folded_into_regex_parameters() -> None:
    programs = tuple(Program(f"tool{i}", f"/usr/local/bin/tool{i:02d}") for i in range(40))
    profile = compile_profile(mac_view(snapshot(WRITE_CWD, programs=programs), []), HOST)
    (rule,) = exec_rules(profile.text)
    names = re.findall(r'\(regex \(param "(PROGRAM_RE_\d+)"\)\)', rule)
    assert names and "(literal" not in rule and len(programs) > FOLD_AT
    params = dict(profile.parameters)
    for program in programs:
        assert sum(bool(re.fullmatch(params[n], program.target)) for n in names) == 1
    assert not any(re.fullmatch(params[n], "/usr/local/bin/tool00x") for n in names)


# -- links in protected paths ------------------------------------------------------------


def test_a_link_in_a_protected_path_where_the_sandbox_writes_refuses_the_launch() -> None:
    linked = Protected(f"{CWD}/hooks", f"{CWD}/scripts/hooks", "folder", True,
                       "core.hooksPath", link=f"{CWD}/scripts")
    with pytest.raises(LaunchError, match="scripts is a link"):
        compile_profile(mac_view(snapshot(WRITE_CWD), [linked]), HOST)
    elsewhere = Protected("/srv/hooks", "/srv/hooks", "folder", True, "core.hooksPath",
                          link="/srv/link")
    compile_profile(mac_view(snapshot(WRITE_CWD), [elsewhere]), HOST)  # read-only there: no refusal


def test_an_allow_follows_a_deny_only_to_bring_the_specs_own_folders_back() -> None:
    """The goldens' review, as a check: once a file rule has been denied, every later
    allow names only paths in a hidden folder (a grant reopened there, or the folders
    on the way to it), never anything a deny before it was meant to keep closed."""
    for name, (snap, protected, host, learn) in SPECS.items():
        profile = compile_profile(mac_view(snap, protected), host, learn=learn)
        params = dict(profile.parameters)
        hidden = [g.target for g in snap.grants if g.access == "hide" and g.target]
        denied = False
        for rule in rules(profile.text):
            if rule.startswith("(deny") and "(param " in rule:
                denied = True
            elif denied and rule.startswith("(allow"):
                paths = [params[p] for p in re.findall(r'\(param "([A-Z0-9_]+)"\)', rule)]
                assert paths, (name, rule)
                for path in paths:
                    assert any(path == h or path.startswith(h + "/") for h in hidden), (
                        name, rule, path)


# -- sockets, case, terminals, macOS's own hides, stubs ----------------------------------


def params_of(rule: str) -> list[str]:
    return re.findall(r'\(param "([A-Z0-9_]+)"\)', rule)


def test_no_read_grant_reaches_a_socket_and_protected_paths_close_them() -> None:
    """A socket is a channel, not something read (mxc): connect only in write grants."""
    for name, (snap, protected, host, learn) in SPECS.items():
        text = rules(compile_profile(mac_view(snap, protected), host, learn=learn).text)
        for rule in text:
            if rule.startswith("(allow") and "network-outbound" in rule:
                assert all(p.startswith("WRITE_") for p in params_of(rule)), (name, rule)
        keeps = [r for r in text if r.startswith("(deny " + " ".join(KEEP_OPS))]
        assert keeps and all("network-outbound" in r for r in keeps), name
    snap, protected, host, _ = SPECS["home-hides-agent"]
    reads = [r for r in rules(compile_profile(mac_view(snap, protected), host).text)
             if "READ_0" in r]
    assert reads and not any("network-outbound" in r for r in reads)


def test_denies_are_never_folded_and_close_every_letter_case() -> None:
    programs = tuple(Program(f"tool{i}", f"/usr/local/bin/tool{i:02d}") for i in range(40))
    many = [Protected(f"{CWD}/sub{i:02d}/.git", f"sub{i:02d}/.git", "folder", True, "git")
            for i in range(30)]
    snap = snapshot(WRITE_CWD, programs=programs)
    profile = compile_profile(mac_view(snap, [*dot_files(CWD), *many]), HOST)
    params = dict(profile.parameters)
    denied = 0
    for rule in rules(profile.text):
        if not rule.startswith("(deny") or "(param " not in rule:
            continue
        names = params_of(rule)
        assert not any("_RE_" in n for n in names), rule
        paths = [params[n] for n in names if "_CASE_" not in n]
        regexes = [params[n] for n in names if "_CASE_" in n]
        assert regexes, rule
        for path in paths:
            for variant in (path, path.upper(), path.swapcase()):
                assert any(re.fullmatch(r, variant) for r in regexes), (rule, variant)
                assert any(re.fullmatch(r, variant + "/hooks/x") for r in regexes) == (
                    f'(subpath (param "{params_key(params, path)}"))' in rule), variant
            denied += 1
        assert all(len(r.encode()) <= REGEX_LIMIT for r in regexes)
    assert denied >= 30
    # Allows are still folded: forty programs are regexes, not forty filters.
    assert any("PROGRAM_RE_" in name for name in params)


def params_key(params: dict[str, str], path: str) -> str:
    return next(n for n, v in params.items() if v == path and "_CASE_" not in n)


def test_a_path_too_long_for_one_regex_keeps_its_head_as_written() -> None:
    from supervisor.macos.profile import any_case_regexes

    long = "/Users/me/" + "/".join(["abcdefghij"] * 40) + "/.git"
    ((regex, held),) = any_case_regexes([long], subpath=True)
    assert held == [long] and len(regex.encode()) <= REGEX_LIMIT
    assert re.fullmatch(regex, long) and re.fullmatch(regex, long[:-3] + "GIT/config")
    assert any_case_regexes(["/"], subpath=True) == []


def test_only_the_commands_own_terminal_opens_by_name() -> None:
    snap, protected, host, learn = SPECS["home-hides-agent"]
    profile = compile_profile(mac_view(snap, protected), host, learn=learn)
    text = rules(profile.text)
    terminal = [r for r in text if "TERMINAL_0" in r]
    assert terminal == ['(allow file-read* file-write-data file-ioctl (literal (param '
                        '"TERMINAL_0")))']
    assert ("TERMINAL_0", "/dev/ttys003") in profile.parameters
    ttys = [r for r in text if "ttys" in r]
    assert ttys == ['(allow file-read* file-write-data file-ioctl (require-all (regex '
                    '#"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))']
    snap, protected, host, _ = SPECS["default"]
    assert not any("TERMINAL" in r for r in rules(compile_profile(mac_view(snap, protected),
                                                                  host).text))


def test_macos_hides_close_library_and_container_sockets_unless_the_spec_names_them() -> None:
    snap, protected, host, learn = SPECS["home-hides-agent"]
    profile = compile_profile(mac_view(snap, protected), host, learn=learn)
    params = dict(profile.parameters)
    hidden = {params[n] for r in rules(profile.text) if r.startswith("(deny")
              for n in params_of(r) if n.startswith("HIDE_") and "_CASE_" not in n}
    assert {HOME + "/Library", HOME + "/.colima", "/opt/homebrew/etc/homebrew",
            "/System/Volumes/Data"} <= hidden
    # Named by the spec itself: a read grant of ~/Library stays a read grant.
    named = snapshot(spec_grant("~", HOME, "read", "files.read[0]"),
                     spec_grant("~/Library", HOME + "/Library", "read", "files.read[1]"),
                     WRITE_CWD)
    profile = compile_profile(mac_view(named, dot_files(CWD)), host)
    params = dict(profile.parameters)
    hidden = {params[n] for r in rules(profile.text) if r.startswith("(deny")
              for n in params_of(r) if n.startswith("HIDE_")}
    assert HOME + "/Library" not in hidden and HOME + "/.colima" in hidden
    # Hidden only where something shows them: the default spec reads no home.
    profile = compile_profile(mac_view(SPECS["default"][0], dot_files(CWD)), host)
    assert HOME + "/Library" not in dict(profile.parameters).values()


def test_stubs_run_what_they_stand_for_and_each_is_named() -> None:
    snap, protected, host, _ = SPECS["programs"]
    profile = compile_profile(mac_view(snap, protected), host)
    (rule,) = exec_rules(profile.text)
    params = dict(profile.parameters)
    listed = [params[p] for p in params_of(rule)]
    assert listed == ["/usr/bin/git", CLT_GIT, "/usr/bin/make",
                      "/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/"
                      "Versions/3.12/bin/python3.12", PYTHON_APP, "/bin/sh", "/bin/bash"]
    assert f"git (/usr/bin/git) runs {CLT_GIT} (/usr/bin/git is an xcrun stub): allowed " \
           "with it" in profile.notes
    # The developer folder outside the system folders is read (the stubs load libxcrun
    # from it), and its tools may not run but for the one listed.
    developer = "/Volumes/Xcode/Xcode.app/Contents/Developer"
    read = [r for r in rules(profile.text) if r.startswith("(allow file-read*")
            and any(params[p] == developer for p in params_of(r))]
    assert len(read) == 1 and "process-exec" not in read[0]


def test_the_reviews_defects_14_to_17_hold_in_every_mode() -> None:
    """#14 resolv.conf read in host mode only (the other modes answer names through the
    proxy or not at all); #15 kern.proc's records and #16 net.routetable's (ps, pgrep,
    getifaddrs) readable in every mode; #17 the local directory's recordStore readable
    (getpwuid), in every mode."""
    for name, (snap, protected, host, learn) in SPECS.items():
        text = rules(compile_profile(mac_view(snap, protected), host, learn=learn).text)
        joined = "\n".join(text)
        resolv = f"(allow file-read* (literal {system.quoted(system.RESOLV_CONF)}))"
        assert (resolv in text) == (snap.settings.network_mode == "host"), name
        for prefix in ("kern.proc.all", "kern.proc.pid.", "net.routetable."):
            assert f"(sysctl-name-prefix {system.quoted(prefix)})" in joined, (name, prefix)
        assert f"(allow file-read* (literal {system.quoted(system.RECORD_STORE)}))" in text, name
