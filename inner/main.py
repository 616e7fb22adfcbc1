"""The inner confiner's entry: confine this process, then become the target.

This is the fallback of the compiled inner (confine.c), which does the same steps in the
same order from the same configuration, and the one that does a harness's file operation.
Started by bwrap inside the sandbox (or by the supervisor itself, without namespaces) as
`python -I -S -c ... CONFIG_FD`, it reads its whole configuration (inner/config.py, the
form the supervisor writes) from the inherited fd and applies its steps in this order:

0. without namespaces (`Config.parent`: no bwrap, supervisor/linux/direct.py), the
   parent-death signal, so that nothing runs on once the supervisor is gone, the parent
   looked at (gone already: exit 125), then no_new_privs and every capability dropped
   for good (capabilities.py): no user namespace holds them;
1. no_new_privs, then the seccomp filter, first of all, so that nothing the target runs
   can escape it and no step below runs unfiltered;
2. the listener fd (when the filter has one) sent to the supervisor at once, before any
   call the filter hands to it could wait on a listener nobody holds;
3. every import finished, since Landlock may close the interpreter's own files;
4. Landlock, which holds the file grants again inside the mounts; without namespaces,
   the reaper left in its domain, and this process nested in a scoped one (reaper.py);
5. the run's per-process limits (processes, open files, CPU time) with setrlimit; then
   default signal dispositions and an empty mask: Python ignores SIGPIPE and SIGXFSZ, bwrap
   was started with SIGINT, SIGTERM, SIGHUP and SIGQUIT ignored, and exec keeps an
   ignored signal ignored;
6. every fd closed but 0-2 and the status socket (close-on-exec, to report an exec
   failure); the mount table handed over when asked (supervisor/linux/mount_watch.py);
7. the supervisor's go awaited (the network helper listening, the terminal handed over);
8. execve; a failure is reported on the status socket and exits 126 or 127. A harness's
   file operation (`Config.file`: fileop.py; this inner's alone) is done here instead,
   confined the same, and nothing is executed.

Any failure before execve exits 125 and says why on the status socket (a configuration
it cannot read, on stderr): the target never runs less confined than asked.
"""

from __future__ import annotations

import errno
import os

from . import config as _config
from . import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class ConfinementFailure(Exception):
    """A step could not be applied; the target must not run."""


def _restore_signals() -> None:
    # _signal, not signal: signal.py's enums cost every sandbox's start a millisecond.
    import _signal  # type: ignore[import-not-found]  # no stub: the C half of signal

    for number in range(1, _signal.NSIG):
        if number in (_signal.SIGKILL, _signal.SIGSTOP):
            continue
        try:
            if _signal.getsignal(number) != _signal.SIG_DFL:
                _signal.signal(number, _signal.SIG_DFL)
        except (OSError, ValueError):
            continue  # numbers the kernel reserves (glibc's SIGCANCEL, SIGSETXID)
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())


def _rlimits(limits: tuple[_config.Rlimit, ...]) -> None:
    """Step 4b: the run's per-process limits, soft and hard alike, never above the hard
    limit the inner was given (raising it needs CAP_SYS_RESOURCE, which none holds)."""
    if not limits:
        return
    import resource

    for limit in limits:
        try:
            _soft, hard = resource.getrlimit(limit.resource)
            top = limit.value if hard == resource.RLIM_INFINITY else min(limit.value, hard)
            resource.setrlimit(limit.resource, (top, top))
        except (OSError, ValueError, OverflowError) as err:
            raise ConfinementFailure(f"the limit {limit.name} = {limit.value} could not be "
                                     f"set: {err}") from None


def _send_mount_table(status: protocol.Channel) -> None:
    """Hand the supervisor this mount namespace's table, complete now, to watch for a
    protection the host takes away (supervisor/linux/mount_watch.py)."""
    try:
        fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as err:
        raise ConfinementFailure(f"cannot open the sandbox's mount table: {err}") from None
    try:
        status.send_mounts(fd)
    finally:
        os.close(fd)


def _close_fds(keep: int) -> None:
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 20)
    os.set_inheritable(keep, False)


def _missing_interpreter(program: str) -> str | None:
    """The `#!` interpreter of the script execve found for `program`, when that is what
    is missing: the kernel answers ENOENT for the script then, as for no file at all.
    Looked up as execvpe does (a name through PATH, the first file there)."""
    if "/" in program:
        candidates = [program]
    else:
        path = os.environ.get("PATH") or os.defpath
        candidates = [os.path.join(folder or ".", program) for folder in path.split(":")]
    for candidate in candidates:
        try:
            with open(candidate, "rb") as handle:
                head = handle.read(256)
        except OSError:
            continue
        if not head.startswith(b"#!"):
            return None
        words = head[2:].split(b"\n", 1)[0].split()
        if words and not os.path.exists(words[0]):
            return os.fsdecode(words[0])
        return None
    return None


def _exec(argv: list[str], status: protocol.Channel) -> NoReturn:
    try:
        os.execvpe(argv[0], argv, os.environ)
    except OSError as err:
        code = err.errno or 0
        interpreter = _missing_interpreter(argv[0]) if code == errno.ENOENT else None
        status.send_exec_failure(code, argv[0], interpreter)
        if interpreter is not None:
            os._exit(126)  # found, but it cannot run: as a shell says of a bad interpreter
        os._exit(127 if code in (2, 20) else 126)  # ENOENT, ENOTDIR: not found


def _direct(parent: int) -> None:
    """Step 0, without namespaces: the inner is the supervisor's own child, not bwrap's,
    so it asks for SIGKILL when the supervisor's thread ends (kept across execve), and
    looks that the supervisor did not end first; then no_new_privs, and every
    capability dropped (root in a container keeps its runtime's otherwise)."""
    from . import capabilities, prctl

    try:
        prctl.set_parent_death_signal(9)
        if os.getppid() != parent:
            os._exit(125)  # the supervisor is gone: nothing may run unsupervised
        prctl.set_no_new_privs()
        capabilities.drop_all()
    except OSError as err:
        raise ConfinementFailure(f"the capabilities could not be dropped: {err}") from None


def _seccomp(settings: _config.Seccomp, status: protocol.Channel) -> None:
    """Steps 1 and 2: no_new_privs, the filter, and its listener handed out at once."""
    from . import prctl, seccomp, syscalls

    try:
        prctl.set_no_new_privs()
        native = syscalls.AUDIT_ARCH[syscalls.native_arch()]
        if settings.arch != native:
            raise ValueError(f"the filter checks the architecture {settings.arch:#x}, and "
                             f"this inner runs as {native:#x}")
        try:
            listener = seccomp.install(settings.program, listener=settings.listener)
        except OSError as err:
            # EBUSY: a filter above already has a listener (one per chain). Without the
            # watch, memory files are refused and execs go unwatched; Landlock still
            # holds the program list. learn cannot go on without it (no fallback).
            if err.errno != errno.EBUSY or settings.fallback is None:
                raise
            listener = seccomp.install(settings.fallback, listener=False)
            status.send_notice(protocol.NO_LISTENER)
    except (OSError, ValueError) as err:
        raise ConfinementFailure(f"the seccomp filter could not be installed: {err}") from None
    if listener is not None:
        status.send_listener(listener)
        os.close(listener)


def _landlock(settings: _config.Landlock, status: protocol.Channel) -> None:
    """Step 4. The kernel's own answer decides, whatever a cached check said."""
    from . import landlock

    try:
        abi = landlock.abi_version()
    except OSError as err:
        raise ConfinementFailure(f"Landlock could not be probed: {err}") from None
    if abi == 0:
        if settings.required:
            raise ConfinementFailure(
                "this kernel has no Landlock (its calls answer ENOSYS), which the spec "
                "needs: its program list is enforced by Landlock alone"
            )
        status.send_notice(protocol.NO_LANDLOCK)
        return
    try:
        rules, listed = landlock.close_hidden(settings.rules, dict(settings.closed))
        if settings.optional:
            # Without namespaces the supervisor listed the folders itself
            # (direct_rules.py): what it listed may be gone, or a link, by now.
            listed |= {path for path, _ in rules}
        landlock.apply(rules, abi=abi, table=settings.abis, file_rights=settings.file_rights,
                       optional=listed, nofollow=settings.nofollow)
    except OSError as err:
        raise ConfinementFailure(f"Landlock could not be applied: {err}") from None


def _read(config_fd: int) -> _config.Config:
    """The configuration, or exit 125 saying why on stderr: without it there is no
    status socket to say it on."""
    try:
        return _config.read(config_fd)
    except (OSError, ValueError) as err:
        os.write(2, f"lnk-sandbox: the inner confiner's configuration is unreadable: "
                    f"{err}\n".encode("utf-8", "replace"))
        os._exit(125)


def main(config_fd: int) -> NoReturn:
    config = _read(config_fd)
    try:
        status = protocol.Channel(config.status_fd)
    except OSError as err:
        os.write(2, f"lnk-sandbox: the inner confiner's status socket: {err}\n".encode())
        os._exit(125)
    try:
        if config.parent is not None:
            _direct(config.parent)
        if config.seccomp is not None:
            _seccomp(config.seccomp, status)
        # Step 3: every import finished before Landlock may close the files they need.
        import _signal  # noqa: F401

        from . import landlock  # noqa: F401

        if config.rlimits:
            import resource  # noqa: F401
        if config.file is not None:
            from . import fileop
        if config.reaper is not None:
            from . import reaper

        if config.landlock is not None:
            _landlock(config.landlock, status)
        if config.reaper is not None:
            try:
                reaper.leave(config.reaper,
                             config.landlock.abis if config.landlock is not None else ())
            except OSError as err:
                raise ConfinementFailure(f"the reaper could not be left: {err}") from None
        _rlimits(config.rlimits)
        _restore_signals()
        _close_fds(status.fd)
        if config.watch_mounts:
            _send_mount_table(status)
        if not status.wait_for_go():
            os._exit(125)  # the supervisor is gone: nothing may run unsupervised
    except ConfinementFailure as err:
        status.send_confinement_failure(str(err))
        os._exit(125)
    if config.file is not None:
        fileop.perform(config.file, status)
    _exec(list(config.argv), status)
