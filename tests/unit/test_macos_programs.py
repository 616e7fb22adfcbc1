"""Files a listed program runs in its place, found with fake stubs, a fake `xcrun`, a fake
/private/var/select/sh and a fake framework Python laid out in a temp folder; then the
profile allows each with its program (review section 4.1, item 9)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from supervisor.grants import Grant, Program, Snapshot
from supervisor.macos.profile import MacHost, compile_profile
from supervisor.macos.programs import (
    STUB_MARK,
    Companion,
    Toolchain,
    companions,
    framework_python,
    runs_instead,
)
from supervisor.policy import RunSettings
from support.views import mac_view


def executable(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text)
    else:
        path.write_bytes(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def machine(tmp_path: Path) -> tuple[Toolchain, dict[str, Path]]:
    """A developer folder with git and python3, /usr/bin stubs for both and for a tool
    it lacks, a real program, an xcrun answering like the real one, /bin/sh's link."""
    developer = tmp_path / "CommandLineTools"
    tool_git = executable(developer / "usr/bin/git", "#!/bin/sh\n")
    framework = developer / "Library/Frameworks/Python3.framework/Versions/3.9"
    python = executable(framework / "bin/python3.9", "#!/bin/sh\n")
    (developer / "usr/bin/python3").symlink_to(python)
    app = executable(framework / "Resources/Python.app/Contents/MacOS/Python", "#!/bin/sh\n")
    stub = b"\xcf\xfa\xed\xfe" + b"\0" * 64 + STUB_MARK + b"\0" * 64
    stubs = {name: executable(tmp_path / "usr/bin" / name, stub)
             for name in ("git", "python3", "missing-tool")}
    real = executable(tmp_path / "usr/bin/make", b"\xcf\xfa\xed\xfe" + b"\0" * 200)
    log = tmp_path / "xcrun.log"
    xcrun = executable(tmp_path / "xcrun", f"""#!/bin/sh
echo "$@ DEVELOPER_DIR=${{DEVELOPER_DIR:-}}" >> {log}
[ "$1" = --find ] || exit 64
if [ ! -e "{developer}/usr/bin/$2" ]; then
    echo "xcrun: error: unable to find utility \\"$2\\"" >&2; exit 72
fi
echo "{developer}/usr/bin/$2"
""")
    bash = executable(tmp_path / "bin/bash", "#!/bin/sh\n")
    select = tmp_path / "select"
    select.mkdir()
    (select / "sh").symlink_to(bash)
    links = tmp_path / "links"
    links.mkdir()
    (links / "developer_dir").symlink_to(developer)
    toolchain = Toolchain(xcrun=str(xcrun), bin_sh=str(tmp_path / "bin/sh"),
                          select_sh=str(select / "sh"),
                          developer_links=(str(links / "gone"), str(links / "developer_dir")))
    executable(tmp_path / "bin/sh", b"\xcf\xfa\xed\xfe")
    found = {"developer": developer, "tool_git": tool_git, "python": python, "app": app,
             "bash": bash, "make": real, "log": log, **{f"stub_{k}": v for k, v in stubs.items()}}
    return toolchain, found


def test_a_stub_runs_the_tool_xcrun_finds(tmp_path: Path) -> None:
    toolchain, found = machine(tmp_path)
    assert toolchain.is_stub(str(found["stub_git"]))
    assert not toolchain.is_stub(str(found["make"]))
    assert not toolchain.is_stub(str(tmp_path / "nothing-here"))
    assert runs_instead(str(found["stub_git"]), toolchain, {}) == [
        (str(found["tool_git"]), f"{found['stub_git']} is an xcrun stub")]
    # The sandbox's DEVELOPER_DIR is what the stub inside will use: xcrun is asked with it.
    runs_instead(str(found["stub_git"]), toolchain, {"DEVELOPER_DIR": "/Dev", "HOME": "/h"})
    assert found["log"].read_text().splitlines()[-1] == "--find git DEVELOPER_DIR=/Dev"


def test_a_python_stub_runs_the_framework_and_its_python_app(tmp_path: Path) -> None:
    toolchain, found = machine(tmp_path)
    assert runs_instead(str(found["stub_python3"]), toolchain, {}) == [
        (str(found["python"]), f"{found['stub_python3']} is an xcrun stub"),
        (str(found["app"]), f"{found['python']} is a framework build's python")]
    assert framework_python(str(found["python"])) == str(found["app"])
    assert framework_python(str(found["app"])) is None
    assert framework_python("/opt/homebrew/bin/python3") is None


def test_bin_sh_runs_the_selected_shell(tmp_path: Path) -> None:
    toolchain, found = machine(tmp_path)
    assert runs_instead(toolchain.bin_sh, toolchain, {}) == [
        (str(found["bash"]), f"/bin/sh runs the shell {toolchain.select_sh} names")]
    gone = Toolchain(xcrun=toolchain.xcrun, bin_sh=toolchain.bin_sh,
                     select_sh=str(tmp_path / "no-select"))
    assert runs_instead(toolchain.bin_sh, gone, {}) == []


def test_what_xcrun_cannot_find_and_plain_programs_run_nothing_else(tmp_path: Path) -> None:
    toolchain, found = machine(tmp_path)
    assert runs_instead(str(found["stub_missing-tool"]), toolchain, {}) == []
    assert runs_instead(str(found["make"]), toolchain, {}) == []
    broken = Toolchain(xcrun=str(tmp_path / "no-xcrun"))
    assert runs_instead(str(found["stub_git"]), broken, {}) == []


def test_the_developer_folder_is_the_sandboxs_or_xcode_selects(tmp_path: Path) -> None:
    toolchain, found = machine(tmp_path)
    assert toolchain.developer_dir({}) == str(found["developer"])
    assert toolchain.developer_dir({"DEVELOPER_DIR": str(tmp_path / "bin")}) == str(
        tmp_path / "bin")
    assert toolchain.developer_dir({"DEVELOPER_DIR": "relative"}) is None
    assert Toolchain(developer_links=(str(tmp_path / "none"),)).developer_dir({}) is None


def test_the_profile_allows_each_program_with_what_it_runs(tmp_path: Path) -> None:
    toolchain, found = machine(tmp_path)
    programs = (Program("git", str(found["stub_git"])), Program("make", str(found["make"])),
                Program("python3", str(found["stub_python3"])))
    found_here = companions(programs, toolchain, {})
    assert found_here == (
        Companion(0, str(found["tool_git"]), f"{found['stub_git']} is an xcrun stub"),
        Companion(2, str(found["python"]), f"{found['stub_python3']} is an xcrun stub"),
        Companion(2, str(found["app"]), f"{found['python']} is a framework build's python"))
    home = str(tmp_path / "home")
    snapshot = Snapshot(
        1,
        "spec.toml",
        home,
        home,
        home + "/.lnk",
        501,
        (Grant("/", str(tmp_path), "read", "files.read[0]", "files.read[0]", 1),),
        programs,
        RunSettings("none", (), (), None, None))
    profile = compile_profile(mac_view(snapshot, ()), MacHost(home=home, companions=found_here))
    params = dict(profile.parameters)
    (rule,) = [r for r in profile.text.split("\n(") if r.startswith("allow process-exec*")]
    allowed = [params[n] for n in re.findall(r'\(param "(PROGRAM_\d+)"\)', rule)]
    assert allowed == [str(found["stub_git"]), str(found["tool_git"]), str(found["make"]),
                       str(found["stub_python3"]), str(found["python"]), str(found["app"])]
    assert os.path.basename(allowed[1]) == "git"
