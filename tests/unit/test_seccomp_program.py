"""The assembled seccomp program, run whole by a small classic-BPF interpreter.

Every expectation below is written out here, independently of inner/seccomp.py's
POLICY, and checked against the real bytes the inner would install, for both
architectures and every mode: a wrong jump, a missing rule, or a rule that reads the
wrong argument word shows up as a wrong action, not just a different listing.
"""

from __future__ import annotations

import errno
import itertools
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from inner import seccomp, syscalls
from support.capabilities import missing

ARCHES = ("x86_64", "aarch64")
MODES = ("allow", "notify", "enosys")
ROOT = Path(__file__).resolve().parents[2]

ALLOW = 0x7FFF0000
NOTIFY = 0x7FC00000


def err(code: int) -> int:
    return 0x00050000 | code


# What the filter must answer for each call refused by name, whatever its arguments.
REFUSED = {
    "clone3": errno.ENOSYS,
    "open_tree": errno.ENOSYS,
    "open_tree_attr": errno.ENOSYS,
    "move_mount": errno.ENOSYS,
    "fsopen": errno.ENOSYS,
    "fsconfig": errno.ENOSYS,
    "fsmount": errno.ENOSYS,
    "fspick": errno.ENOSYS,
    "mount_setattr": errno.ENOSYS,
    "openat2": errno.ENOSYS,
    **dict.fromkeys([
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
        "create_module", "get_kernel_syms", "query_module", "bpf", "keyctl", "add_key",
        "request_key", "mount", "umount2", "pivot_root", "chroot", "swapon", "swapoff",
        "reboot", "acct", "open_by_handle_at", "name_to_handle_at", "userfaultfd",
        "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
        "unshare", "setns", "quotactl", "quotactl_fd", "lookup_dcookie", "syslog",
        "settimeofday", "clock_settime", "iopl", "ioperm", "uselib", "ustat", "sysfs",
        "_sysctl", "nfsservctl", "kcmp", "process_madvise", "move_pages", "migrate_pages",
        "vmsplice", "fanotify_init", "sethostname", "setdomainname", "vhangup",
    ], errno.EPERM),
    "io_setup": errno.ENOSYS,
}
X86_ONLY = {"create_module", "get_kernel_syms", "query_module", "iopl", "ioperm", "uselib",
            "ustat", "sysfs", "_sysctl"}
# Calls whose rules read an argument; with all-zero arguments each runs (or notifies).
ARGUMENT_RULES = {"ioctl", "socket", "clone", "personality", "execveat", "memfd_create",
                  "execve", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open",
                  "open", "openat", "creat", "chmod", "fchmod", "fchmodat", "fchmodat2",
                  "mknod", "mknodat", "fcntl"}
# Calls that set a file's mode, and the argument holding it; x86_64 alone has the first
# four. A mode with set-user-ID (0o4000) or set-group-ID (0o2000) is refused.
MODE_ARGUMENT = {"chmod": 1, "fchmod": 1, "creat": 1, "mknod": 1, "fchmodat": 2,
                 "fchmodat2": 2, "mknodat": 2}
# Calls that make a file only when asked (O_CREAT 0o100, or O_TMPFILE's 0o20000000 bit):
# (flags argument, mode argument).
CREATING = {"open": (1, 2), "openat": (2, 3)}
# Calls refused only against pid 1 (bwrap's unfiltered init), and the argument holding it.
PID_ONE_RULES = {"ptrace": 1, "process_vm_readv": 0, "process_vm_writev": 0, "pidfd_open": 0}


# ---- a classic BPF interpreter, as strict as the kernel's checker --------------------

LD_W_ABS, JA, JEQ, JGT, JGE, JSET, RET, AND = 0x20, 0x05, 0x15, 0x25, 0x35, 0x45, 0x06, 0x54


def decode(program: bytes) -> list[tuple[int, int, int, int]]:
    """The instructions, after the checks seccomp_check_filter and bpf_check_classic make."""
    assert len(program) % 8 == 0 and 0 < len(program) // 8 <= 4096
    insns = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    for pc, (code, jt, jf, k) in enumerate(insns):
        assert code in (LD_W_ABS, JA, JEQ, JGT, JGE, JSET, RET, AND), hex(code)
        if code == LD_W_ABS:
            assert k % 4 == 0 and k < 64, f"load at {k} is not an aligned word of seccomp_data"
        elif code == JA:
            assert pc + 1 + k < len(insns)
        elif code in (JEQ, JGT, JGE, JSET):
            assert pc + 1 + max(jt, jf) < len(insns)
    assert insns[-1][0] in (RET, JA), "the program can run off its end"
    return insns


def run(program: bytes, nr: int, arch: int, args: tuple[int, ...] = (),
        loads: list[int] | None = None) -> int:
    """The filter's return value for one call; `loads` collects the offsets read."""
    full = (*args, *(0,) * (6 - len(args)))
    data = struct.pack("<IIQ6Q", nr & 0xFFFFFFFF, arch, 0x401000, *full)
    insns = decode(program)
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
            if loads is not None:
                loads.append(k)
        elif code == AND:
            acc &= k
        elif code == JA:
            pc += k
        elif code == RET:
            return k
        else:
            taken = {JEQ: acc == k, JGT: acc > k, JGE: acc >= k, JSET: bool(acc & k)}[code]
            pc += jt if taken else jf


def programs() -> list[tuple[str, str, bool]]:
    return list(itertools.product(ARCHES, MODES, (False, True)))


def build(arch: str, memfd: str = "allow", exec_notify: bool = False) -> bytes:
    return seccomp.build_program(arch, memfd=memfd, exec_notify=exec_notify)


def call(program: bytes, arch: str, name: str, *args: int) -> int:
    return run(program, syscalls.TABLES[arch][name], syscalls.AUDIT_ARCH[arch], args)


# ---- the program's shape ----------------------------------------------------------------

@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_program_is_valid_and_small(arch: str, memfd: str, exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    insns = decode(program)
    # A few dozen rules, the record says: about 140 instructions with the set-ID rules,
    # far from 4096.
    assert len(insns) < 160
    assert insns[0] == (LD_W_ABS, 0, 0, 4), "the arch is checked before anything else"


@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_calls_without_rules_read_no_argument(arch: str, memfd: str, exec_notify: bool) -> None:
    """The kernel's per-number cache skips the filter only for calls decided on nr alone."""
    program = build(arch, memfd, exec_notify)
    audit = syscalls.AUDIT_ARCH[arch]
    ruled = {syscalls.TABLES[arch][n] for n in ARGUMENT_RULES if n in syscalls.TABLES[arch]}
    for nr in range(600):
        loads: list[int] = []
        run(program, nr, audit, (1, 2, 3, 4, 5, 6), loads)
        if nr not in ruled:
            assert set(loads) <= {0, 4}, nr


# ---- the whole table: every number, every mode ------------------------------------------

@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_every_number_with_zero_arguments(arch: str, memfd: str, exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    table = syscalls.TABLES[arch]
    expected = {table[name]: err(code) for name, code in REFUSED.items() if name in table}
    if memfd == "notify":
        expected[table["memfd_create"]] = NOTIFY
    elif memfd == "enosys":
        expected[table["memfd_create"]] = err(errno.ENOSYS)
    if exec_notify:
        expected[table["execve"]] = expected[table["execveat"]] = NOTIFY
    for nr in range(1024):
        got = run(program, nr, syscalls.AUDIT_ARCH[arch])
        assert got == expected.get(nr, ALLOW), (nr, hex(got))


@pytest.mark.parametrize(("arch", "name"), [
    (arch, name) for arch in ARCHES for name in sorted(REFUSED)
    if arch == "x86_64" or name not in X86_ONLY])
def test_each_refused_call_with_any_arguments(arch: str, name: str) -> None:
    for memfd, exec_notify in itertools.product(MODES, (False, True)):
        program = build(arch, memfd, exec_notify)
        for args in ((), (0xFFFFFFFF,) * 6, (1 << 63, 0x10000000, 0x5412, 1, 2, 0x1000)):
            assert call(program, arch, name, *args) == err(REFUSED[name])


def test_x86_only_calls_are_absent_on_aarch64() -> None:
    """An x86 name's number is another call on aarch64 (172 is getpid there)."""
    program = build("aarch64")
    assert not X86_ONLY & set(syscalls.TABLES["aarch64"])
    for name in X86_ONLY:
        nr = syscalls.TABLES["x86_64"][name]
        assert run(program, nr, syscalls.AUDIT_ARCH["aarch64"]) == ALLOW


# ---- the arch and x32 checks ------------------------------------------------------------

FOREIGN = {
    "i386": 0x40000003,
    "arm": 0x40000028,
    "x86_64": 0xC000003E,
    "aarch64": 0xC00000B7,
    "riscv64": 0xC00000F3,
    "none": 0,
}


@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_a_foreign_arch_gets_enosys_for_every_number(arch: str, memfd: str,
                                                     exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    for name, audit in FOREIGN.items():
        if name == arch:
            continue
        for nr in (*range(512), 0x40000027, 0xFFFFFFFF):
            assert run(program, nr, audit) == err(errno.ENOSYS), (name, nr)


def test_i386_getpid_through_int_0x80_is_refused() -> None:
    assert run(build("x86_64"), 20, 0x40000003) == err(errno.ENOSYS)


@pytest.mark.parametrize("nr", [0x40000000, 0x40000000 | 39, 0x40000000 | 165,
                                0x40000000 | 59, 0x7FFFFFFF, 0xFFFFFFFF])
def test_x32_numbers_get_enosys_on_x86_64(nr: int) -> None:
    for memfd, exec_notify in itertools.product(MODES, (False, True)):
        assert run(build("x86_64", memfd, exec_notify), nr, 0xC000003E) == err(errno.ENOSYS)


def test_aarch64_has_no_x32_check() -> None:
    """No such ABI there: an out-of-range number reaches the kernel, which says ENOSYS."""
    assert run(build("aarch64"), 0x40000000 | 172, 0xC00000B7) == ALLOW


# ---- argument rules --------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("command", "expected"), [
    (0x5412, err(errno.EPERM)),  # TIOCSTI
    (0x541C, err(errno.EPERM)),  # TIOCLINUX
    (0x1_0000_5412, err(errno.EPERM)),  # the kernel drops the high word: still TIOCSTI
    (0xFFFFFFFF_0000541C, err(errno.EPERM)),
    (0x5423, err(errno.EPERM)),  # TIOCSETD
    (0x1_0000_5423, err(errno.EPERM)),
    (0x540C, err(errno.EPERM)),  # TIOCEXCL
    (0xFFFFFFFF_0000540C, err(errno.EPERM)),
    (0x5424, ALLOW),  # TIOCGETD
    (0x540D, ALLOW),  # TIOCNXCL
    (0x5413, ALLOW),  # TIOCGWINSZ
    (0x541B, ALLOW),  # FIONREAD
    (0x5411, ALLOW),
    (0x5412_0000, ALLOW),
    (0xC0502100, ALLOW),
    (0, ALLOW),
])
def test_ioctl(arch: str, command: int, expected: int) -> None:
    for memfd, exec_notify in itertools.product(MODES, (False, True)):
        program = build(arch, memfd, exec_notify)
        assert call(program, arch, "ioctl", 0, command, 0) == expected
        assert call(program, arch, "ioctl", 0x5412, 0x5413, 0x5412) == ALLOW  # only arg1


CLONE_FLAGS = {"NEWNS": 0x20000, "NEWCGROUP": 0x02000000, "NEWUTS": 0x04000000,
               "NEWIPC": 0x08000000, "NEWUSER": 0x10000000, "NEWPID": 0x20000000,
               "NEWNET": 0x40000000}
SIGCHLD = 17
FORK_LIKE = 0x01200000 | SIGCHLD  # glibc's fork: CHILD_CLEARTID | CHILD_SETTID | SIGCHLD
THREAD_LIKE = 0x003D0F00  # CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|*_TID


@pytest.mark.parametrize("arch", ARCHES)
def test_clone_with_a_namespace_flag_is_refused(arch: str) -> None:
    program = build(arch)
    for name, flag in CLONE_FLAGS.items():
        for extra in (0, SIGCHLD, FORK_LIKE, THREAD_LIKE, 1 << 40):
            assert call(program, arch, "clone", flag | extra) == err(errno.EPERM), name
    assert call(program, arch, "clone", 0x7E020000) == err(errno.EPERM)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("flags", [0, SIGCHLD, FORK_LIKE, THREAD_LIKE,
                                   0x80,  # CLONE_NEWTIME is an exit signal's bits in clone
                                   0x80000000,  # CLONE_IO
                                   0x10000000 << 32,  # NEWUSER in the high word: dropped
                                   0xFFFFFFFF_00000000 | FORK_LIKE])
def test_clone_without_a_namespace_flag_runs(arch: str, flags: int) -> None:
    program = build(arch)
    assert call(program, arch, "clone", flags, 0x10000000, 0x10000000) == ALLOW


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("persona", "expected"), [
    (0, ALLOW), (0x8, ALLOW), (0x20000, ALLOW), (0x20008, ALLOW), (0xFFFFFFFF, ALLOW),
    (0x1_0000_0008, ALLOW),  # an unsigned int: the kernel reads 8
    (0x0040000, err(errno.EPERM)),  # ADDR_NO_RANDOMIZE
    (0x0400000, err(errno.EPERM)),  # READ_IMPLIES_EXEC
    (0x0400008, err(errno.EPERM)),
    (0x20009, err(errno.EPERM)),
    (0x1, err(errno.EPERM)),
    (0xFFFFFFFE, err(errno.EPERM)),
    (0xFFFFFFFF_00040000, err(errno.EPERM)),
])
def test_personality(arch: str, persona: int, expected: int) -> None:
    assert call(build(arch), arch, "personality", persona) == expected


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("family", "expected"), [
    (38, err(errno.EAFNOSUPPORT)),  # AF_ALG
    (40, err(errno.EAFNOSUPPORT)),  # AF_VSOCK
    (0x1_0000_0026, err(errno.EAFNOSUPPORT)),  # an int: the kernel reads 38
    (1, ALLOW), (2, ALLOW), (10, ALLOW), (16, ALLOW), (17, ALLOW), (39, ALLOW), (41, ALLOW),
])
def test_socket(arch: str, family: int, expected: int) -> None:
    program = build(arch)
    assert call(program, arch, "socket", family, 1, 0) == expected
    assert call(program, arch, "socket", 2, 38, 40) == ALLOW  # only the family counts


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("family", "protocol", "expected"), [
    (16, 2, err(errno.EPROTONOSUPPORT)),  # NETLINK_USERSOCK: queues no cgroup is charged for
    (16, 0x1_0000_0002, err(errno.EPROTONOSUPPORT)),  # an int: the kernel reads 2
    (16, 0, ALLOW), (16, 4, ALLOW), (16, 16, ALLOW),  # ROUTE, SOCK_DIAG, GENERIC
    (2, 2, ALLOW), (1, 2, ALLOW),  # protocol 2 of another family
])
def test_netlink_protocols(arch: str, family: int, protocol: int, expected: int) -> None:
    assert call(build(arch), arch, "socket", family, 3, protocol) == expected


MFD_CLOEXEC, MFD_ALLOW_SEALING, MFD_HUGETLB, MFD_NOEXEC_SEAL, MFD_EXEC = 1, 2, 4, 8, 0x10
MFD_HUGE_2MB = 21 << 26


def memfd_expected(mode: str, flags: int) -> int:
    low = flags & 0xFFFFFFFF
    if low & MFD_HUGETLB:
        return err(errno.EINVAL)
    if mode == "allow" or low & MFD_NOEXEC_SEAL:
        return ALLOW
    return NOTIFY if mode == "notify" else err(errno.ENOSYS)


MEMFD_FLAGS = [0, MFD_CLOEXEC, MFD_ALLOW_SEALING, MFD_CLOEXEC | MFD_ALLOW_SEALING, MFD_EXEC,
               MFD_EXEC | MFD_CLOEXEC, MFD_NOEXEC_SEAL, MFD_NOEXEC_SEAL | MFD_CLOEXEC,
               MFD_NOEXEC_SEAL | MFD_EXEC, MFD_HUGETLB, MFD_HUGETLB | MFD_CLOEXEC,
               MFD_HUGETLB | MFD_NOEXEC_SEAL, MFD_HUGETLB | MFD_HUGE_2MB | MFD_NOEXEC_SEAL,
               MFD_HUGETLB | MFD_EXEC, MFD_NOEXEC_SEAL << 32, MFD_HUGETLB << 32,
               (MFD_HUGETLB << 32) | MFD_NOEXEC_SEAL, 0xFFFFFFFF_00000000 | MFD_CLOEXEC]


@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_memfd_create(arch: str, memfd: str, exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    for flags in MEMFD_FLAGS:
        expected = memfd_expected(memfd, flags)
        assert call(program, arch, "memfd_create", 0x7F0000, flags) == expected, hex(flags)
        # The name pointer is arg0: a huge-page or seal bit there means nothing.
        assert call(program, arch, "memfd_create", MFD_HUGETLB | MFD_NOEXEC_SEAL,
                    flags) == expected


def test_the_three_memfd_modes_at_a_glance() -> None:
    plain = {m: call(build("x86_64", m), "x86_64", "memfd_create", 1, 0) for m in MODES}
    sealed = {m: call(build("x86_64", m), "x86_64", "memfd_create", 1, 8) for m in MODES}
    huge = {m: call(build("x86_64", m), "x86_64", "memfd_create", 1, 4) for m in MODES}
    assert plain == {"allow": ALLOW, "notify": NOTIFY, "enosys": err(errno.ENOSYS)}
    assert sealed == dict.fromkeys(MODES, ALLOW)
    assert huge == dict.fromkeys(MODES, err(errno.EINVAL))


@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_execveat(arch: str, memfd: str, exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    runs = NOTIFY if exec_notify else ALLOW
    cases = {
        0x1000: err(errno.EPERM),  # AT_EMPTY_PATH: fexecve
        0x1000 | 0x100: err(errno.EPERM),  # with AT_SYMLINK_NOFOLLOW
        0xFFFFFFFF: err(errno.EPERM),
        0x1_0000_1000: err(errno.EPERM),
        0: runs,
        0x100: runs,
        0x1000 << 32: runs,  # an int: the kernel never sees the high word
    }
    for flags, expected in cases.items():
        assert call(program, arch, "execveat", 3, 0x7F0000, 0, 0, flags) == expected, hex(flags)
    # AT_EMPTY_PATH anywhere but arg4 is not a flag.
    assert call(program, arch, "execveat", 0x1000, 0x1000, 0x1000, 0x1000, 0, 0x1000) == runs


@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_execve(arch: str, memfd: str, exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    for args in ((), (0x7F0000, 0x7F1000, 0x7F2000), (0x1000,) * 6):
        assert call(program, arch, "execve", *args) == (NOTIFY if exec_notify else ALLOW)


@pytest.mark.parametrize(("arch", "memfd", "exec_notify"), programs())
def test_ordinary_calls_run(arch: str, memfd: str, exec_notify: bool) -> None:
    program = build(arch, memfd, exec_notify)
    ordinary = {"x86_64": {"read": 0, "write": 1, "openat": 257, "mmap": 9, "getpid": 39,
                           "wait4": 61, "vfork": 58, "fork": 57, "ptrace": 101,
                           "adjtimex": 159, "clock_adjtime": 305, "memfd_secret": 447,
                           "landlock_create_ruleset": 444, "seccomp": 317, "prctl": 157},
                "aarch64": {"read": 63, "write": 64, "openat": 56, "mmap": 222,
                            "getpid": 172, "wait4": 260, "ptrace": 117, "adjtimex": 171,
                            "clock_adjtime": 266, "memfd_secret": 447,
                            "landlock_create_ruleset": 444, "seccomp": 277, "prctl": 167}}
    for name, nr in ordinary[arch].items():
        assert run(program, nr, syscalls.AUDIT_ARCH[arch], (5, 6, 7)) == ALLOW, name


# ---- the policy as data, the builder's errors, the syscall tables ----------------------

def test_policy_names_only_known_calls_and_errnos() -> None:
    for name, action, checks in seccomp.POLICY:
        assert any(name in table for table in syscalls.TABLES.values()), name
        assert isinstance(action, int) and 0 < action < 4096, name
        for index, op, _ in checks:
            assert 0 <= index < 6 and op in ("any", "none", "in", "not in")
    refused = {name: action for name, action, checks in seccomp.POLICY if not checks}
    assert refused == REFUSED


def test_no_rule_kills() -> None:
    for arch, memfd, exec_notify in programs():
        for code, _, _, k in decode(build(arch, memfd, exec_notify)):
            if code == RET:
                assert k in (ALLOW, NOTIFY) or k & 0xFFFF0000 == 0x00050000, hex(k)


def test_builder_refuses_what_it_cannot_build() -> None:
    with pytest.raises(ValueError, match="table"):
        seccomp.build_program("riscv64", memfd="allow", exec_notify=False)
    with pytest.raises(ValueError, match="memfd mode"):
        seccomp.build_program("x86_64", memfd="seal", exec_notify=False)


def test_assembler_refuses_a_jump_too_far() -> None:
    asm = seccomp._Assembler()
    asm.jump(JEQ, 1, jt="far")
    for _ in range(256):
        asm.ret(ALLOW)
    asm.label("far")
    asm.ret(0)
    with pytest.raises(ValueError, match="does not fit"):
        asm.assemble()


def _header_numbers(path: Path) -> dict[str, int]:
    """The numbers a header defines; asm-generic names the calls that take a 64-bit
    offset on 32-bit systems __NR3264_* (fcntl is __NR3264_fcntl there)."""
    text = path.read_text()
    return {m[2]: int(m[3]) for m in re.finditer(r"#define __NR(3264)?_(\w+)\s+(\d+)", text)}


@pytest.mark.parametrize(("arch", "header"), [
    ("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    ("aarch64", "/usr/include/asm-generic/unistd.h"),
])
def test_numbers_match_the_kernel_headers(arch: str, header: str) -> None:
    path = Path(header)
    if not path.exists():
        missing(f"{header} is not installed (linux-libc-dev)")
    known = _header_numbers(path)
    # Linux 6.15, 6.6, 6.13 and 6.17 (the last three: direct mode's), after these headers
    newer = {"open_tree_attr": 467, "fchmodat2": 452, "setxattrat": 463,
             "removexattrat": 466, "getxattrat": 464, "listxattrat": 465,
             "file_setattr": 469}
    for name, nr in syscalls.TABLES[arch].items():
        assert known.get(name, newer.get(name)) == nr, name
    for name in X86_ONLY:
        assert (name in known) == (arch == "x86_64"), name


# ---- the inner starts fast ---------------------------------------------------------------

def test_importing_does_nothing_and_pulls_in_nothing_slow() -> None:
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); before = set(sys.modules)\n"
        "from inner import prctl, seccomp, syscalls\n"
        "slow = {'typing', 'dataclasses', 'enum', 're', 'inspect', 'platform', 'collections'}\n"
        "print(sorted(slow & (set(sys.modules) - before)), syscalls._libc)\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script, str(ROOT)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "None"]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", sorted(PID_ONE_RULES))
def test_calls_against_pid_one_are_refused_and_others_run(arch: str, name: str) -> None:
    index = PID_ONE_RULES[name]
    for mode in MODES:
        program = build(arch, mode)
        for pid, expected in ((1, err(errno.EPERM)), (2, ALLOW), (0, ALLOW),
                              (1 | (1 << 32), err(errno.EPERM))):
            args = [0] * 6
            args[index] = pid
            assert call(program, arch, name, *args) == expected, (name, pid, mode)


# ---- no set-user-ID or set-group-ID file ---------------------------------------------------

# umode_t is 16 bits: the kernel reads the low word alone, and so must the filter.
SETID_MODES = (0o4755, 0o2755, 0o6755, 0o4000, 0o2000, 0o104755, 0xFFFF << 48 | 0o4000)
PLAIN_MODES = (0o755, 0o644, 0o1777, 0o100644, 0o20755, 0xFFFF << 48 | 0o755, 0o6000 << 32)


@pytest.mark.parametrize(("arch", "name"), [
    (arch, name) for arch in ARCHES for name in sorted(MODE_ARGUMENT)
    if name in syscalls.TABLES[arch]])
def test_a_mode_with_setuid_or_setgid_is_refused(arch: str, name: str) -> None:
    index = MODE_ARGUMENT[name]
    for memfd, exec_notify in itertools.product(MODES, (False, True)):
        program = build(arch, memfd, exec_notify)
        for mode in SETID_MODES:
            args = [7] * 6
            args[index] = mode
            assert call(program, arch, name, *args) == err(errno.EPERM), (name, oct(mode))
        for mode in PLAIN_MODES:  # the low 32 bits alone count, as the kernel reads them
            args = [7] * 6
            args[index] = mode
            assert call(program, arch, name, *args) == ALLOW, (name, oct(mode))


@pytest.mark.parametrize(("arch", "name"), [
    (arch, name) for arch in ARCHES for name in sorted(CREATING)
    if name in syscalls.TABLES[arch]])
def test_a_file_made_with_setuid_or_setgid_is_refused(arch: str, name: str) -> None:
    flags_at, mode_at = CREATING[name]
    O_CREAT, O_TMPFILE, O_WRONLY, O_DIRECTORY = 0o100, 0o20000000, 0o1, 0o200000
    cases = [
        (O_CREAT | O_WRONLY, 0o4755, err(errno.EPERM)),
        (O_CREAT, 0o2644, err(errno.EPERM)),
        (O_TMPFILE | O_DIRECTORY | O_WRONLY, 0o6755, err(errno.EPERM)),
        (O_CREAT | O_WRONLY, 0o755, ALLOW),
        (O_WRONLY, 0o4755, ALLOW),  # no file is made: the mode is not read by the kernel
        (0, 0o6755, ALLOW),
        (1 << 32 | O_WRONLY, 0o4755, ALLOW),  # flags are an int: the high word is not read
    ]
    for memfd, exec_notify in itertools.product(MODES, (False, True)):
        program = build(arch, memfd, exec_notify)
        for flags, mode, expected in cases:
            args = [7] * 6
            args[flags_at], args[mode_at] = flags, mode
            assert call(program, arch, name, *args) == expected, (name, oct(flags), oct(mode))


@pytest.mark.parametrize("arch", ARCHES)
def test_openat2_is_unavailable_since_its_mode_cannot_be_read(arch: str) -> None:
    program = build(arch)
    assert call(program, arch, "openat2", -100 & 0xFFFFFFFF, 0, 0, 24) == err(errno.ENOSYS)


def test_rules_after_a_two_check_rule_load_their_own_argument() -> None:
    """A conjunction that fails at its first check leaves that word in the accumulator:
    a later rule of the same call must load its own argument again."""
    asm_rules = (("openat", errno.EPERM, ((2, "any", 0o100), (3, "any", 0o4000))),
                 ("openat", errno.EACCES, ((3, "in", (5,)),)))
    original = seccomp.POLICY
    seccomp.POLICY = asm_rules
    try:
        program = build("x86_64")
    finally:
        seccomp.POLICY = original
    assert call(program, "x86_64", "openat", 0, 0, 0, 5) == err(errno.EACCES)
    assert call(program, "x86_64", "openat", 0, 0, 0o100, 5) == err(errno.EACCES)
    assert call(program, "x86_64", "openat", 0, 0, 0o100, 0o4000) == err(errno.EPERM)
    assert call(program, "x86_64", "openat", 0, 0, 5, 0o4000) == ALLOW


@pytest.mark.parametrize("arch", ARCHES)
def test_a_lease_is_refused_and_other_fcntl_commands_run(arch: str) -> None:
    F_SETLEASE, F_GETLEASE, F_SETFL, F_SETLK = 1024, 1025, 4, 6
    for memfd, exec_notify in itertools.product(MODES, (False, True)):
        program = build(arch, memfd, exec_notify)
        assert call(program, arch, "fcntl", 3, F_SETLEASE, 0) == err(errno.EPERM)
        assert call(program, arch, "fcntl", 3, (1 << 32) | F_SETLEASE, 0) == err(errno.EPERM)
        for command in (F_GETLEASE, F_SETFL, F_SETLK, 0):
            assert call(program, arch, "fcntl", 3, command, 0) == ALLOW
