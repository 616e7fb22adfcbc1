"""lnk-sandbox in a real unprivileged Docker container, as root and as a user there.

Debian's docker.io with its default seccomp profile and capabilities, which refuses
unshare without CAP_SYS_ADMIN: no user namespace can be made, and lnk-sandbox runs its
sandboxes without namespaces (linux/direct.py), chosen by itself. Each test here runs
lnk inside the container as a person there would: the default spec, the README's
recipes (each runs, or is refused at launch with its reason), and the attacks that apply
(each watched failing with the exact errno after the probe started inside, with a
control outside the sandbox showing it would have worked there).
"""

from __future__ import annotations

import errno
import re
import shlex
from collections.abc import Iterator

import pytest

from integration.test_readme_recipes import recipe
from support.container import LNK, PROBE, USER, Container, image, start, stop_daemon, wheels

pytestmark = [pytest.mark.requires_docker, pytest.mark.timeout(600)]
WHO = ["root", USER]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Container]:
    folder = tmp_path_factory.mktemp("wheels")
    folder.chmod(0o755)
    wheels(folder)
    running = start(image(), folder)
    yield running
    running.remove()
    # Its daemon (started by support/container.py where none ran) stops with the module: a
    # /run/docker.sock left for the rest of the suite changes what root mode's tests see.
    stop_daemon()


def home(who: str) -> str:
    return "/root" if who == "root" else f"/home/{who}"


def fresh(box: Container, who: str, name: str) -> str:
    """A new project folder of `who`'s in their home; its path."""
    path = f"{home(who)}/{name}"
    assert box.sh(f"rm -rf {path} && mkdir -p {path}", user=who).returncode == 0
    return path


def lnk(box: Container, who: str, where: str, args: str, *, spec: str | None = None
        ) -> tuple[int, str, str]:
    """`lnk sandbox ARGS` run by `who` in `where`; (status, stdout, stderr)."""
    script = f"cd {where} && "
    if spec is not None:
        script += f"cat > spec.toml <<'EOF'\n{spec}EOF\n"
    command = args.split(" ", 1)
    extra = " --spec spec.toml --yes" if spec is not None and command[0] in (
        "run", "learn") else " --spec spec.toml" if spec is not None else ""
    script += f"{LNK} sandbox {command[0]}{extra} {command[1] if len(command) > 1 else ''}"
    done = box.sh(script, user=who)
    return done.returncode, done.stdout, done.stderr


def probe(box: Container, who: str, where: str, *args: str, spec: str | None = None,
          expect: int) -> str:
    """The probe inside with one action; asserts it started and ended with `expect`."""
    status, out, err = lnk(box, who, where, "run -- python3 " + PROBE + " "
                           + shlex.join(args), spec=spec)
    assert "STARTED " in out, f"the probe never started inside:\n{err}\n{out}"
    assert status == expect, (f"expected {errno.errorcode.get(expect, expect)}, got "
                              f"{errno.errorcode.get(status, status)}\n{out}\n{err}")
    # The kernel's answer, not a traceback's status 1 taken for EPERM.
    assert f"RESULT errno={expect}" in out if expect else "RESULT ok" in out, out
    return err


def test_the_container_allows_no_user_namespace(box: Container) -> None:
    """The premise, shown: Docker's profile refuses unshare, and the kernel offers the
    rest (the facts of shared/reference/containers-userns-and-start.md)."""
    done = box.sh("unshare -U true; echo $?")
    assert done.stdout.strip() != "0" and "Operation not permitted" in done.stderr
    done = box.sh("grep -E '^(Seccomp|CapEff)' /proc/self/status")
    assert "Seccomp:\t2" in done.stdout and "CapEff:\t00000000a80425fb" in done.stdout


@pytest.mark.parametrize("who", WHO)
def test_check_says_the_mode_and_that_the_default_spec_can_launch(box: Container,
                                                                   who: str) -> None:
    where = fresh(box, who, "proj")
    status, out, _ = lnk(box, who, where, "check")
    assert status == 0, out
    assert "user namespaces     no: the sandbox runs without namespaces" in out
    assert "spec <default spec>: can launch here" in out
    assert "Landlock            ABI " in out and "seccomp listener    yes" in out
    assert "no namespaces (no user namespace can be made here)" in out
    _, described, _ = lnk(box, who, where, "describe")
    assert "without namespaces (none can be made here, or LNK_NAMESPACES=off):" in described


@pytest.mark.parametrize("who", WHO)
def test_the_default_spec_runs(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    status, out, err = lnk(box, who, where, "run -- sh -c 'echo hi'")
    assert (status, out) == (0, "hi\n"), err
    assert "lnk-sandbox: no user namespace can be made here, so this sandbox runs without " \
        "namespaces" in err


@pytest.mark.parametrize("who", WHO)
def test_every_capability_is_dropped(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    status, out, err = lnk(box, who, where, f"run -- python3 {PROBE} caps")
    assert status == 0, err
    # A user holds no CAP_SETPCAP to empty the bounding set, and needs none: under
    # no_new_privs an exec never gives more than the empty permitted set it had.
    sets = ("CapInh", "CapPrm", "CapEff", "CapAmb") + (("CapBnd",) if who == "root" else ())
    for name in sets:
        assert re.search(rf"^{name}:\t0000000000000000$", out, re.M), out
    assert re.search(r"^NoNewPrivs:\t1$", out, re.M), out


@pytest.mark.parametrize("who", WHO)
def test_the_compiled_inner_runs_there(box: Container, who: str) -> None:
    """The wheel holds the static inner, and the run without namespaces starts it: check
    says so, and the target keeps the inner's count of minor page faults across the
    exec, a few dozen where the Python inner's interpreter and imports make about 1500."""
    where = fresh(box, who, "proj")
    status, out, err = lnk(box, who, where, "check")
    assert status == 0, err
    assert "  inner confiner      compiled (" in out, out
    status, out, err = lnk(box, who, where, "run -- cat /proc/self/stat")
    assert status == 0, err
    faults = int(out.rsplit(")", 1)[1].split()[7])  # minflt, the 10th field
    assert faults < 600, faults


@pytest.mark.parametrize("who", WHO)
def test_recipe_path(box: Container, who: str) -> None:
    # `lnk --version`: lnk on the PATH; the link step is the clone's, not the wheel's.
    done = box.sh(f"{LNK} --version", user=who)
    assert done.stdout == recipe("path").steps[1].expected


@pytest.mark.parametrize(("name", "why"), [
    ("agent", "files.caches: a private cache is a folder shown at another path"),
    ("packages", "files.caches: a private cache is a folder shown at another path"),
])
@pytest.mark.parametrize("who", WHO)
def test_the_recipes_that_need_namespaces_are_refused_with_the_reason(
        box: Container, who: str, name: str, why: str) -> None:
    found = recipe(name)
    where = fresh(box, who, f"recipe-{name}")
    (file, text), = found.files.items()
    command = found.steps[0].command.replace(f"--spec {file} --yes", "", 1)
    status, _, err = lnk(box, who, where, command.removeprefix("lnk sandbox "), spec=text)
    assert status == 125, err
    assert why in err and "no user namespace can be made here" in err
    assert "network.mode: proxy mode needs a network namespace" in err


@pytest.mark.parametrize("who", WHO)
def test_recipe_commit(box: Container, who: str) -> None:
    where = fresh(box, who, "recipe-commit")
    setup = box.sh(f"cd {where} && git init -q && git config user.name 'Ann Example' && "
                   "git config user.email ann@example.org && echo hi > greeting && "
                   "git add greeting && git commit -qm 'First commit' && echo hello > "
                   "greeting", user=who)
    assert setup.returncode == 0, setup.stderr
    found = recipe("commit")
    status, _, err = lnk(box, who, where, found.steps[0].command.removeprefix("lnk sandbox "))
    assert status == 128
    assert "Unable to create" in err and "index.lock': Permission denied" in err
    assert "lnk-sandbox: git commit failed in" in err
    status, _, err = lnk(box, who, where, "run -- true", spec=found.files["commit.toml"])
    assert status == 125
    assert "files.commit: committing makes files at the top of .git" in err
    log = box.sh(f"git -C {where} log --format=%s", user=who)
    assert log.stdout == "First commit\n"  # nothing was committed


@pytest.mark.parametrize("who", WHO)
def test_recipe_build(box: Container, who: str) -> None:
    where = fresh(box, who, "recipe-build")
    box.sh(f"cd {where} && printf 'hello: hello.c\\n\\tcc -o hello hello.c\\n' > Makefile && "
           "printf 'int main(void) { return 0; }\\n' > hello.c", user=who)
    found = recipe("build")
    spec = found.files["build.toml"]
    # learn reads each program's path from the process that runs it, which Docker's
    # default profile refuses (process_vm_readv): refused at launch, with the remedy.
    status, _, err = lnk(box, who, where, "learn --output programs.toml -- make", spec=spec)
    assert status == 125, err
    assert "learn reads each program's path from the process that runs it" in err
    assert "--cap-add SYS_PTRACE" in err
    # As written, the build makes `hello` at the top of the written folder: without
    # mounts nothing new can be made there, which the launch says.
    status, _, err = lnk(box, who, where, "run -- make", spec=spec)
    assert status != 0
    assert "cannot open output file hello: Permission denied" in err
    assert "nothing new can be made at the top of . in this mode" in err
    # With the top opened it builds; a list without the program it made refuses it.
    opened = spec + 'write_dot_files = ["."]\n'
    status, out, err = lnk(box, who, where, "run -- make", spec=opened)
    assert (status, out) == (0, "cc -o hello hello.c\n"), err
    listed = opened + '[commands]\nprograms = ["make"]\n'
    status, _, err = lnk(box, who, where, "run -- ./hello", spec=listed)
    assert status == 126, err
    assert "lnk-sandbox: cannot run ./hello: Permission denied" in err
    assert "refused programs go unnamed" in err


@pytest.mark.parametrize("who", WHO)
def test_a_file_outside_the_grants(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    box.sh(f"echo secret > {home(who)}/secret.txt", user=who)
    assert box.sh(f"cat {home(who)}/secret.txt", user=who).stdout == "secret\n"  # control
    probe(box, who, where, "read", f"{home(who)}/secret.txt", expect=errno.EACCES)
    probe(box, who, where, "read", "/etc/debian_version", expect=0)


@pytest.mark.parametrize("who", WHO)
def test_a_protected_dot_file(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    box.sh(f"git -C {where} init -q", user=who)
    before = box.sh(f"sha256sum {where}/.git/config", user=who).stdout
    probe(box, who, where, "write", f"{where}/.git/config", expect=errno.EACCES)
    probe(box, who, where, "write", f"{where}/.git/hooks/pre-commit", expect=errno.EACCES)
    probe(box, who, where, "write", f"{where}/.envrc", expect=errno.EACCES)
    # The person's git afterwards: the same settings, no hook, and the control that
    # git would have run one.
    assert box.sh(f"sha256sum {where}/.git/config", user=who).stdout == before
    assert box.sh(f"test -e {where}/.git/hooks/pre-commit || test -e {where}/.envrc",
                  user=who).returncode == 1
    assert box.sh(f"git -C {where} status --short", user=who).returncode == 0


@pytest.mark.parametrize("who", WHO)
def test_a_hidden_folder(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    box.sh(f"mkdir -p {home(who)}/.ssh && echo KEY > {home(who)}/.ssh/id_ed25519 && "
           f"echo mine > {home(who)}/notes.txt", user=who)
    spec = '[files]\nread = ["~"]\nwrite = ["."]\n'
    probe(box, who, where, "read", f"{home(who)}/notes.txt", spec=spec, expect=0)
    probe(box, who, where, "read", f"{home(who)}/.ssh/id_ed25519", spec=spec,
          expect=errno.EACCES)
    probe(box, who, where, "list", f"{home(who)}/.ssh", spec=spec, expect=errno.EACCES)


@pytest.mark.parametrize("who", WHO)
def test_network_none(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    port = "4567" if who == "root" else "4568"
    server = box.sh("python3 -c 'import socket,os,sys\n"
                    f"s=socket.create_server((\"127.0.0.1\", {port}))\n"
                    "sys.stdout.write(\"up\\n\"); sys.stdout.flush()\n"
                    "os.close(1)\n"
                    "s.accept()[0].close()' > /tmp/server.out 2>&1 & "
                    # Listening once it says so (a loaded machine takes its time).
                    "for i in $(seq 300); do grep -q up /tmp/server.out && break; "
                    "sleep 0.1; done; cat /tmp/server.out")
    assert "up" in server.stdout, server.stderr
    # The control: with the host's network (the container's) the probe connects.
    host = '[files]\nwrite = ["."]\n[network]\nmode = "host"\n'
    probe(box, who, where, "connect", "127.0.0.1", port, spec=host, expect=0)
    probe(box, who, where, "connect", "127.0.0.1", port, expect=errno.EACCES)
    probe(box, who, where, "abstract", "lnk-test", expect=errno.EACCES)


@pytest.mark.parametrize("who", WHO)
def test_a_program_list(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["python3"]\n'
    err = probe(box, who, where, "exec", "/usr/bin/id", spec=spec, expect=errno.EACCES)
    # Landlock refuses it; the watch cannot read its path here to name it, and says so.
    assert "the exec watch cannot read a program's path here (process_vm_readv is " \
        "refused): refused programs go unnamed; the list still holds" in err
    _, out, _ = lnk(box, who, where, "check", spec=spec)
    assert "cannot read a program's path here (process_vm_readv is refused" in out


def test_root_s_doors(box: Container) -> None:
    where = fresh(box, "root", "proj")
    # Controls: root reads and writes these outside, by uid 0 and its capabilities.
    assert box.sh("head -c1 /etc/shadow >/dev/null && test -w /etc/hostname").returncode == 0
    box.sh(f"echo theirs > /home/{USER}/private && chmod 600 /home/{USER}/private",
           user=USER)
    assert box.sh(f"cat /home/{USER}/private").stdout == "theirs\n"
    probe(box, "root", where, "read", "/etc/shadow", expect=errno.EACCES)
    probe(box, "root", where, "write", "/etc/hostname", expect=errno.EACCES)
    # In a folder granted, a file another user owns: only DAC_OVERRIDE would read it.
    spec = f'[files]\nread = ["/home/{USER}"]\nwrite = ["."]\n'
    probe(box, "root", where, "read", f"/home/{USER}/private", spec=spec,
          expect=errno.EACCES)
    # mknod of a block device (CAP_MKNOD), chown (CAP_CHOWN), in a folder it writes;
    # the controls: root does both outside.
    box.sh(f"mkdir {where}/sub")
    assert box.sh(f"mknod {where}/sub/outside b 8 0 && chown 1000 {where}/sub/outside && "
                  f"rm {where}/sub/outside").returncode == 0
    status, _, err = lnk(box, "root", where, "run -- mknod sub/disk b 8 0")
    assert status == 1 and "mknod: sub/disk: Operation not permitted" in err, err
    status, _, err = lnk(box, "root", where, "run -- chown 1000 sub")
    assert status == 1 and "chown: changing ownership of 'sub': Operation not permitted" \
        in err, err
    # The container's pid 1, root's: SIGCONT, harmless were it sent.
    probe(box, "root", where, "syscall", "62", "1", "18", expect=errno.EPERM)
    # /proc/sys is Docker's read-only mount; the sandbox's /proc is Landlock's too.
    probe(box, "root", where, "read", "/proc/1/environ", expect=errno.EACCES)


@pytest.mark.parametrize("who", WHO)
def test_system_v_ipc_and_unix_sockets(box: Container, who: str) -> None:
    where = fresh(box, who, "proj")
    probe(box, who, where, "syscall", "29", "0", "4096", str(0o1600), expect=errno.ENOSYS)
    probe(box, who, where, "connect-unix", "/run/any.sock", expect=errno.EACCES)


