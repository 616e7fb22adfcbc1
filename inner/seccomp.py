"""The seccomp filter: refuse by name what a sandboxed program does not need.

Facts (checked on Linux 6.18 x86_64 unless marked [H], read from the kernel's source):
- A filter is classic BPF run on `struct seccomp_data {int nr; u32 arch; u64
  instruction_pointer; u64 args[6]}` (64 bytes) before every system call. Only aligned
  32-bit loads inside it are accepted, so an argument is two words: the low one at
  16 + 8i, the high one at 20 + 8i (little-endian on both architectures here).
- Jumps go forward only. A conditional jump's offsets (jt, jf) are u8; only JA takes a
  32-bit offset. At most 4096 instructions (BPF_MAXINSNS).
- The arch must be checked first: an x86_64 process can still make i386 calls with
  `int 0x80`, where every number means another call (20 is getpid there, not writev).
  x32 calls arrive with the X86_64 arch and nr | 0x40000000 and are refused by number.
- The kernel reads an int argument as its low 32 bits: ioctl(fd, 0x1_0000_5412) still
  performed TIOCSTI. So every argument check compares the low word only. clone takes
  an unsigned long but keeps only `lower_32_bits(flags)` [H]; memfd_create's,
  execveat's, socket's and personality's are ints.
- ERRNO(e) skips the call and returns -e, so a program sees an ordinary failure and can
  fall back: this filter never kills. ENOSYS reads as "this kernel has no such call",
  which makes libraries fall back (glibc's posix_spawn from clone3 to clone; mount
  tools from the new mount API to mount(2)), so it goes where a fallback is wanted. It
  must never answer execveat, whose ENOSYS sends glibc's fexecve to
  execve("/proc/self/fd/N"), which runs the file anyway.
- USER_NOTIF hands the call to whoever holds the listener fd; a filter with no listener,
  or one whose listener was closed, answers ENOSYS (so memfd_create then fails closed).
  Of stacked filters the strictest action wins: ERRNO beats USER_NOTIF beats ALLOW [H].
- Since 5.11 the kernel runs a filter ahead once per number and skips it for numbers it
  allows without reading an argument [H]. Rules read an argument only after matching a
  number, so an ordinary call costs nothing; the argument rules go first, since the
  calls they name (ioctl above all) run the filter every time.
- The filter needs no_new_privs (or CAP_SYS_ADMIN) to install (EACCES), survives fork
  and execve, and cannot be removed. One listener per filter chain: a second
  NEW_LISTENER gives EBUSY. WAIT_KILLABLE_RECV (5.19) needs NEW_LISTENER (EINVAL
  alone); with it only a fatal signal interrupts a call the listener has received.
- Flags a kernel does not know give EINVAL before it reads the program: asked with a
  NULL program, a kernel that knows them answers EFAULT and installs nothing.
- Huge-page memory files (MFD_HUGETLB) take F_SEAL_EXEC but hugetlbfs does not enforce
  it: fchmod makes the file executable again. memfd_secret's files live on a noexec
  pseudo filesystem and never run (EACCES), so they need no rule.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from . import syscalls

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    # (argument index, "any" | "none" | "in" | "not in", bit mask or values)
    Check = tuple[int, str, int | tuple[int, ...]]
    # (call name, errno or NOTIFY, checks that must all hold; () for every call of that name)
    Rule = tuple[str, int | str, tuple[Check, ...]]

# seccomp(2) operations and SET_MODE_FILTER flags.
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_GET_NOTIF_SIZES = 3
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_FILTER_FLAG_LOG = 2
SECCOMP_FILTER_FLAG_SPEC_ALLOW = 4
SECCOMP_FILTER_FLAG_NEW_LISTENER = 8
SECCOMP_FILTER_FLAG_TSYNC_ESRCH = 16
SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 32

# Filter return values (the action in the high 16 bits, its data in the low 16).
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_KILL_THREAD = 0x00000000
SECCOMP_RET_TRAP = 0x00030000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_USER_NOTIF = 0x7FC00000
SECCOMP_RET_TRACE = 0x7FF00000
SECCOMP_RET_LOG = 0x7FFC0000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_DATA = 0x0000FFFF

# The listener's ioctls are the supervisor's (supervisor/linux/notify.py): the inner
# only makes the listener and hands it over.

# Classic BPF opcodes, the only ones the filter uses.
BPF_LD_W_ABS = 0x20
BPF_JMP_JA = 0x05
BPF_JMP_JEQ_K = 0x15
BPF_JMP_JGT_K = 0x25
BPF_JMP_JGE_K = 0x35
BPF_JMP_JSET_K = 0x45
BPF_RET_K = 0x06
BPF_MAXINSNS = 4096

SECCOMP_DATA_NR = 0
SECCOMP_DATA_ARCH = 4


def arg_low(index: int) -> int:
    """Offset of args[index]'s low word, the only part the rules compare."""
    return 16 + 8 * index


# The values the rules name.
TIOCSTI = 0x5412  # pushes bytes into a terminal's input, read outside as if typed
TIOCLINUX = 0x541C  # the Linux console's own, which can paste its selection the same way
AF_ALG = 38  # the kernel's crypto API: a large attack surface nothing here needs
AF_VSOCK = 40  # sockets to the hypervisor or its other guests, around the network rules
AF_NETLINK = 16
# Netlink's one protocol for messages between programs: each queued message is kernel
# memory no memory cgroup is charged for (600 MiB of payload held 1.15 GiB, seen here),
# and nothing a sandboxed program needs (ip, ss and libc's lookups use NETLINK_ROUTE).
NETLINK_USERSOCK = 2
AT_EMPTY_PATH = 0x1000  # execveat(fd, "", ...): fexecve, running a file by descriptor
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEW_ANY = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
                 | CLONE_NEWPID | CLONE_NEWNET)  # 0x7E020000
# Linux, PER_LINUX32, UNAME26 and both (what `setarch` and uname26 programs set), and
# 0xffffffff, which only asks; the others (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE) turn
# off memory protections for every program the process runs after.
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
F_SETLEASE = 1024
S_ISUID = 0o4000
S_ISGID = 0o2000
O_CREAT = 0o100  # the same on x86_64 and aarch64
O_TMPFILE = 0o20000000  # __O_TMPFILE: an unnamed file, made with the mode given
MFD_CLOEXEC = 0x1
MFD_ALLOW_SEALING = 0x2
MFD_HUGETLB = 0x4
MFD_NOEXEC_SEAL = 0x8
MFD_EXEC = 0x10

NOTIFY = "notify"  # a rule's action: hand the call to the listener (the exec watch)
MEMFD_MODES = ("allow", "notify", "enosys")

EPERM = errno.EPERM
ENOSYS = errno.ENOSYS

# Every call of a name no rule matches runs; for a name, the first rule that matches
# decides. A name missing from an architecture's table is skipped there.
POLICY: tuple[Rule, ...] = (
    # Rules that read an argument first (see the facts above), openat and ioctl first of
    # all, since a program makes them more than any other call that runs the filter.
    #
    # No set-user-ID or set-group-ID file: run by root, a sandbox's files in a write
    # grant are root's on disk (idmapped), so a copy of a shell it made setuid would
    # give anyone who later runs it outside root, and one run by a person would give
    # anyone that person. The mode is in a register for
    # every call that sets one, but for openat2, whose mode sits in a struct the filter
    # cannot read: it answers ENOSYS, as on a kernel before 5.6, and every caller falls
    # back to openat. mkdir needs no rule: the kernel drops both bits from its mode (a
    # folder gets set-group-ID only from a parent that has it, which is harmless); a
    # chmod cannot be told from a folder's, so `chmod g+s` on a folder is refused too.
    ("openat", EPERM, ((2, "any", O_CREAT | O_TMPFILE), (3, "any", S_ISUID | S_ISGID))),
    ("ioctl", EPERM, ((1, "in", (TIOCSTI, TIOCLINUX)),)),
    ("open", EPERM, ((1, "any", O_CREAT | O_TMPFILE), (2, "any", S_ISUID | S_ISGID))),
    ("creat", EPERM, ((1, "any", S_ISUID | S_ISGID),)),
    ("chmod", EPERM, ((1, "any", S_ISUID | S_ISGID),)),
    ("fchmod", EPERM, ((1, "any", S_ISUID | S_ISGID),)),
    ("fchmodat", EPERM, ((2, "any", S_ISUID | S_ISGID),)),
    ("fchmodat2", EPERM, ((2, "any", S_ISUID | S_ISGID),)),
    ("mknod", EPERM, ((1, "any", S_ISUID | S_ISGID),)),
    ("mknodat", EPERM, ((2, "any", S_ISUID | S_ISGID),)),
    ("openat2", ENOSYS, ()),
    # A lease on a file the sandbox may open makes every writer outside wait for it
    # (up to fs.lease-break-time, 45 s) and tells it who came: no sandbox holds one.
    ("fcntl", EPERM, ((1, "in", (F_SETLEASE,)),)),
    ("socket", errno.EAFNOSUPPORT, ((0, "in", (AF_ALG, AF_VSOCK)),)),
    ("socket", errno.EPROTONOSUPPORT, ((0, "in", (AF_NETLINK,)),
                                       (2, "in", (NETLINK_USERSOCK,)))),
    ("clone", EPERM, ((0, "any", CLONE_NEW_ANY),)),
    ("personality", EPERM, ((0, "not in", PERSONALITIES),)),
    ("execveat", EPERM, ((4, "any", AT_EMPTY_PATH),)),
    # bwrap's pid 1 runs inside the sandbox without this filter (or Landlock): a process
    # that attached to it, read or wrote its memory, or took its fds would act
    # unfiltered. Other processes inside are all under the filter; the supervisor and
    # bwrap's outer process are in no namespace the sandbox sees. (/proc/1 is masked.)
    ("ptrace", EPERM, ((1, "in", (1,)),)),
    ("process_vm_readv", EPERM, ((0, "in", (1,)),)),
    ("process_vm_writev", EPERM, ((0, "in", (1,)),)),
    ("pidfd_open", EPERM, ((0, "in", (1,)),)),
    # ENOSYS, so that libc falls back: clone3's flags sit behind a pointer the filter
    # cannot read, clone's are in a register; the new mount API falls back to mount,
    # which is refused below.
    ("clone3", ENOSYS, ()),
    ("open_tree", ENOSYS, ()),
    ("open_tree_attr", ENOSYS, ()),
    ("move_mount", ENOSYS, ()),
    ("fsopen", ENOSYS, ()),
    ("fsconfig", ENOSYS, ()),
    ("fsmount", ENOSYS, ()),
    ("fspick", ENOSYS, ()),
    ("mount_setattr", ENOSYS, ()),
    # The kernel itself: modules, kexec, BPF programs, the keyring, reboot.
    ("kexec_load", EPERM, ()),
    ("kexec_file_load", EPERM, ()),
    ("init_module", EPERM, ()),
    ("finit_module", EPERM, ()),
    ("delete_module", EPERM, ()),
    ("create_module", EPERM, ()),
    ("get_kernel_syms", EPERM, ()),
    ("query_module", EPERM, ()),
    ("bpf", EPERM, ()),
    ("keyctl", EPERM, ()),
    ("add_key", EPERM, ()),
    ("request_key", EPERM, ()),
    ("reboot", EPERM, ()),
    ("syslog", EPERM, ()),
    ("perf_event_open", EPERM, ()),
    ("lookup_dcookie", EPERM, ()),
    ("uselib", EPERM, ()),
    ("ustat", EPERM, ()),
    ("sysfs", EPERM, ()),
    ("_sysctl", EPERM, ()),
    ("nfsservctl", EPERM, ()),
    # The mounts and namespaces bwrap built: a program keeps the view it was given.
    ("mount", EPERM, ()),
    ("umount2", EPERM, ()),
    ("pivot_root", EPERM, ()),
    ("chroot", EPERM, ()),
    ("unshare", EPERM, ()),
    ("setns", EPERM, ()),
    ("swapon", EPERM, ()),
    ("swapoff", EPERM, ()),
    ("acct", EPERM, ()),
    ("quotactl", EPERM, ()),
    ("quotactl_fd", EPERM, ()),
    ("open_by_handle_at", EPERM, ()),  # opens any file of a mount by handle, past binds
    ("name_to_handle_at", EPERM, ()),
    ("fanotify_init", EPERM, ()),
    # The machine's identity and clock. adjtimex and clock_adjtime stay open: glibc's
    # adjtimex() and ntp_gettime() read the clock through clock_adjtime with modes 0,
    # the modes sit behind a pointer, and the kernel refuses a change without
    # CAP_SYS_TIME, which no sandbox holds.
    ("sethostname", EPERM, ()),
    ("setdomainname", EPERM, ()),
    ("settimeofday", EPERM, ()),
    ("clock_settime", EPERM, ()),
    ("vhangup", EPERM, ()),
    # Other processes' memory and the kernel's less-trodden paths.
    ("userfaultfd", EPERM, ()),
    ("io_uring_setup", EPERM, ()),
    ("io_uring_enter", EPERM, ()),
    ("io_uring_register", EPERM, ()),
    ("kcmp", EPERM, ()),
    ("process_madvise", EPERM, ()),
    ("move_pages", EPERM, ()),
    ("migrate_pages", EPERM, ()),
    ("vmsplice", EPERM, ()),
    # The kernel's asynchronous I/O contexts come from one table for the whole machine
    # (fs.aio-max-nr), with no count per user: a sandbox took all 65536 and every other
    # program's io_setup failed until it ended. ENOSYS, as on a kernel built without
    # AIO, which libaio's users (databases, fio, qemu) fall back from.
    ("io_setup", ENOSYS, ()),
    # x86 only: port I/O. vm86 and vm86old exist only in the i386 table, refused whole.
    ("iopl", EPERM, ()),
    ("ioperm", EPERM, ()),
)


def rules(*, memfd: str, exec_notify: bool, extra: tuple[Rule, ...] = ()) -> tuple[Rule, ...]:
    """POLICY with the memory-file and exec rules a launch's mode adds, then `extra`:
    the supervisor's own rules for a launch without namespaces (sockets, System V and
    POSIX IPC: supervisor/linux/direct_rules.py), after every rule of the same name here.

    memfd "allow" (no program list): memory files run as they are. "notify" (a list
    and a listener that can seal): a call asking for MFD_NOEXEC_SEAL runs as it is,
    any other goes to the exec watch, which makes the file sealed. "enosys" (a list,
    but no listener or no seal): any other fails with ENOSYS, as on a kernel without
    memfd_create. MFD_HUGETLB fails with EINVAL in every mode, checked first: its seal
    is not enforced, and a kernel without huge pages answers the same.
    """
    if memfd not in MEMFD_MODES:
        raise ValueError(f"memfd mode {memfd!r} is not one of {MEMFD_MODES}")
    added: list[Rule] = [("memfd_create", errno.EINVAL, ((1, "any", MFD_HUGETLB),))]
    if memfd != "allow":
        unsealed: int | str = NOTIFY if memfd == "notify" else ENOSYS
        added.append(("memfd_create", unsealed, ((1, "none", MFD_NOEXEC_SEAL),)))
    if exec_notify:
        added += [("execve", NOTIFY, ()), ("execveat", NOTIFY, ())]
    return POLICY + tuple(added) + tuple(extra)


def return_value(action: int | str) -> int:
    """The filter's return value for a rule's action."""
    if action == NOTIFY:
        return SECCOMP_RET_USER_NOTIF
    if action == "allow":
        return SECCOMP_RET_ALLOW
    if not isinstance(action, int) or not 0 < action <= SECCOMP_RET_DATA:
        raise ValueError(f"action {action!r} is neither an errno nor {NOTIFY!r}")
    return SECCOMP_RET_ERRNO | action


class _Assembler:
    """Classic BPF with named forward jump targets, resolved once the program is laid out.

    Names keep the layout free to change: a target too far for a u8 offset, or behind
    the jump, is an error at build time rather than a wrong program.
    """

    def __init__(self) -> None:
        # (code, jt, jf, k): jt/jf a target name or None (the next instruction); k a
        # target name only for JA.
        self.insns: list[tuple[int, str | None, str | None, int | str]] = []
        self.labels: dict[str, int] = {}
        self._fresh = 0

    def fresh(self) -> str:
        self._fresh += 1
        return f".{self._fresh}"

    def label(self, name: str) -> None:
        if name in self.labels:
            raise ValueError(f"target {name} placed twice")
        self.labels[name] = len(self.insns)

    def load(self, offset: int) -> None:
        self.insns.append((BPF_LD_W_ABS, None, None, offset))

    def jump(self, code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        self.insns.append((code, jt, jf, k))

    def goto(self, target: str) -> None:
        self.insns.append((BPF_JMP_JA, None, None, target))

    def ret(self, value: int) -> None:
        self.insns.append((BPF_RET_K, None, None, value))

    def assemble(self) -> bytes:
        if len(self.insns) > BPF_MAXINSNS:
            raise ValueError(f"{len(self.insns)} instructions, the kernel takes {BPF_MAXINSNS}")
        out = []
        for here, (code, jt, jf, k) in enumerate(self.insns):
            k_value = self._offset(here, k, 0xFFFFFFFF) if isinstance(k, str) else k
            out.append(struct.pack("=HBBI", code, self._offset(here, jt, 0xFF),
                                   self._offset(here, jf, 0xFF), k_value))
        return b"".join(out)

    def _offset(self, here: int, target: str | None, limit: int) -> int:
        if target is None:
            return 0
        offset = self.labels[target] - here - 1
        if not 0 <= offset <= limit:
            raise ValueError(f"jump from {here} to {target} ({offset}) does not fit")
        return offset


def build_program(arch: str, *, memfd: str, exec_notify: bool,
                  extra: tuple[Rule, ...] = ()) -> bytes:
    """The filter for `arch` ("x86_64" or "aarch64"), as sock_filter bytes.

    Layout: the arch check, the x32 check, one group per call name (a JEQ on the number,
    then the rules' argument checks), the default RET ALLOW, then one RET per action the
    rules jump to. A "notify" memfd mode or `exec_notify` needs a listener: without one
    the kernel answers those calls ENOSYS.
    """
    table = syscalls.TABLES.get(arch)
    if table is None:
        raise ValueError(f"no system call table for {arch!r}")
    groups: dict[str, list[tuple[int | str, tuple[Check, ...]]]] = {}
    for name, action, checks in rules(memfd=memfd, exec_notify=exec_notify, extra=extra):
        if not any(name in t for t in syscalls.TABLES.values()):
            raise ValueError(f"{name!r} is in no system call table")
        groups.setdefault(name, []).append((action, checks))

    asm = _Assembler()
    targets: dict[int | str, str] = {"allow": "allow"}

    def target(action: int | str) -> str:
        return targets.setdefault(action, f"ret {action}")

    asm.load(SECCOMP_DATA_ARCH)
    asm.jump(BPF_JMP_JEQ_K, syscalls.AUDIT_ARCH[arch], jf=target(ENOSYS))
    asm.load(SECCOMP_DATA_NR)
    if arch == "x86_64":
        asm.jump(BPF_JMP_JGE_K, syscalls.X32_SYSCALL_BIT, jt=target(ENOSYS))

    # Calls with the same rules share one block of checks: chmod, fchmod, creat and
    # mknod all read their mode from the second argument.
    shared: dict[tuple[tuple[int | str, tuple[Check, ...]], ...], list[int]] = {}
    for name, group in groups.items():
        if name in table:
            shared.setdefault(tuple(group), []).append(table[name])
    for group_rules, numbers in shared.items():
        first_action, first_checks = group_rules[0]
        if not first_checks:
            for nr in numbers:
                asm.jump(BPF_JMP_JEQ_K, nr, jt=target(first_action))
            continue
        block, end = asm.fresh(), asm.fresh()
        for nr in numbers[:-1]:
            asm.jump(BPF_JMP_JEQ_K, nr, jt=block)
        asm.jump(BPF_JMP_JEQ_K, numbers[-1], jf=end)
        asm.label(block)
        _emit_group(asm, list(group_rules), target)
        asm.label(end)

    asm.label("allow")
    asm.ret(SECCOMP_RET_ALLOW)
    for action, name in targets.items():
        if name != "allow":
            asm.label(name)
            asm.ret(return_value(action))
    return asm.assemble()


def _emit_group(asm: _Assembler, group: list[tuple[int | str, tuple[Check, ...]]],
                target: Callable[[int | str], str]) -> None:
    """One call's rules in order; the accumulator holds nr on entry and is lost after.

    Each rule jumps to its action when all its checks hold and goes on to the next rule
    at the first that does not; after the last, the call runs. Nothing falls out of the
    group: past its first load the accumulator no longer holds the number the next
    group compares.
    """
    loaded = None
    for action, checks in group:
        if not checks:
            asm.goto(target(action))
            return
        next_rule = asm.fresh()
        # What the accumulator may hold at next_rule: a check that fails jumps there
        # with whatever word it compared.
        compared: set[int | None] = set()
        for position, (index, op, value) in enumerate(checks):
            if loaded != index:
                asm.load(arg_low(index))
                loaded = index
            compared.add(loaded)
            last = position == len(checks) - 1
            # The last check jumps to the action when it holds; an earlier one goes on
            # to the next check when it holds. Either way a check that fails leaves.
            held = target(action) if last else None
            _emit_check(asm, op, value, held=held, failed=next_rule)
        asm.label(next_rule)
        loaded = loaded if len(compared) == 1 else None
    asm.goto("allow")


def _emit_check(asm: _Assembler, op: str, value: int | tuple[int, ...], *,
                held: str | None, failed: str) -> None:
    """Jump to `held` (None: the next instruction) when the loaded word passes `op`,
    to `failed` when it does not."""
    passed = held or asm.fresh()
    if op in ("any", "none"):
        if not isinstance(value, int):
            raise ValueError(f"{op!r} takes a bit mask, not {value!r}")
        if op == "any":
            asm.jump(BPF_JMP_JSET_K, value, jt=passed, jf=failed)
        else:
            asm.jump(BPF_JMP_JSET_K, value, jt=failed, jf=passed)
    elif op in ("in", "not in"):
        if isinstance(value, int) or not value:
            raise ValueError(f"{op!r} takes a tuple of values, not {value!r}")
        hit, miss = (passed, failed) if op == "in" else (failed, passed)
        for v in value[:-1]:
            asm.jump(BPF_JMP_JEQ_K, v, jt=hit)
        asm.jump(BPF_JMP_JEQ_K, value[-1], jt=hit, jf=miss)
    else:
        raise ValueError(f"unknown argument check {op!r}")
    if held is None:
        asm.label(passed)


def install(program: bytes, *, listener: bool) -> int | None:
    """Install `program` on this thread; the listener fd when `listener`, else None.

    The inner is single-threaded when it installs, so the filter covers the whole
    process without TSYNC (whose listener form needs TSYNC_ESRCH, 5.7+). With a
    listener, WAIT_KILLABLE_RECV keeps a signal from aborting a call the exec watch
    already holds (the target would see EINTR, or its restart a second notification).
    Set no_new_privs first (prctl.set_no_new_privs): without it EACCES.
    """
    count, rest = divmod(len(program), 8)
    if rest or not 0 < count <= BPF_MAXINSNS:
        raise ValueError(f"a filter of {len(program)} bytes is not 1 to 4096 instructions")
    flags = 0
    if listener:
        flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
    code = ctypes.create_string_buffer(program, len(program))
    # struct sock_fprog {unsigned short len; struct sock_filter *filter;}, native layout.
    fprog = ctypes.create_string_buffer(struct.pack("@HP", count, ctypes.addressof(code)))
    result = syscalls.syscall("seccomp", SECCOMP_SET_MODE_FILTER, flags, fprog)
    return result if listener else None


def action_available(action: int) -> bool:
    """Whether the kernel knows a return action (USER_NOTIF arrived in 5.0)."""
    value = ctypes.c_uint32(action)
    try:
        syscalls.syscall("seccomp", SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(value))
    except OSError:
        return False
    return True


def flags_supported(flags: int) -> bool:
    """Whether SET_MODE_FILTER takes `flags`, asked without installing anything.

    With no program (NULL) the kernel checks the flags, EINVAL if it does not know one,
    and only then reads the program: EFAULT means every flag was known.
    """
    try:
        syscalls.syscall("seccomp", SECCOMP_SET_MODE_FILTER, flags, ctypes.c_void_p(0))
    except OSError as err:
        return err.errno == errno.EFAULT
    raise AssertionError("seccomp installed a filter from a NULL program")


def listener_supported() -> bool:
    """Whether install(listener=True) can work: USER_NOTIF and its two flags."""
    return (action_available(SECCOMP_RET_USER_NOTIF)
            and flags_supported(SECCOMP_FILTER_FLAG_NEW_LISTENER
                                | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV))


def notif_sizes() -> tuple[int, int, int]:
    """The kernel's sizes of seccomp_notif, seccomp_notif_resp and seccomp_data.

    A listener sizes its buffers from these, not from the headers it was built with:
    a newer kernel may grow them.
    """
    sizes = ctypes.create_string_buffer(6)
    syscalls.syscall("seccomp", SECCOMP_GET_NOTIF_SIZES, 0, sizes)
    notif, resp, data = struct.unpack("=HHH", sizes.raw)
    return notif, resp, data
