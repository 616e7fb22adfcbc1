"""System call numbers per architecture, and the one way this package calls one.

Facts:
- A number means a different call on every architecture: x86_64 has its own table,
  aarch64 uses the generic one (asm-generic/unistd.h), and a call missing from a table
  (x86's iopl or uselib on aarch64) simply has no number there. A filter built for one
  table is wrong for any other, which is why the filter checks the architecture first.
- Calls added since Linux 5.1 (io_uring, the new mount API, clone3 and later) have the
  same number on every architecture.
- vm86 and vm86old exist only in the i386 table; an x86_64 process reaches that table
  through `int 0x80`, which the filter refuses whole by its architecture.
- Some numbers stay reserved after the call was removed (_sysctl, nfsservctl,
  create_module, lookup_dcookie since 6.10): the kernel answers ENOSYS, the filter its
  own errno, so refusing them costs nothing and survives a kernel that brings one back.
- seccomp_data.arch carries an AUDIT_ARCH_* value: x86_64 0xC000003E, aarch64 0xC00000B7,
  i386 (an x86_64 process's `int 0x80`) 0x40000003.
- uname's machine follows the personality: under PER_LINUX32 (`linux32`) an x86_64
  process is told "i686" and still makes x86_64 calls. The process's own ABI is its
  executable's, read from the ELF header.
- ctypes passes a bare Python int to a variadic function as a C int, leaving the upper
  half of a 64-bit register undefined; every argument goes as a C long instead.

Numbers for x86_64 from arch/x86/entry/syscalls/syscall_64.tbl, for aarch64 from
include/uapi/asm-generic/unistd.h, both checked against this machine's headers.
"""

from __future__ import annotations

import ctypes
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_I386 = 0x40000003

# x86_64's x32 ABI marks its calls with this bit in nr, under the X86_64 arch value.
X32_SYSCALL_BIT = 0x40000000

# Calls present on every architecture this package supports, the same number on each.
_COMMON = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_open": 434,
    "clone3": 435,
    "process_madvise": 440,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "openat2": 437,
    "fchmodat2": 452,
    "open_tree_attr": 467,
    # Extended attributes by a folder's fd and a path (Linux 6.13): direct mode's.
    "setxattrat": 463,
    "getxattrat": 464,
    "listxattrat": 465,
    "removexattrat": 466,
    # A file's flags by a folder's fd and a path (Linux 6.17): direct mode's.
    "file_setattr": 469,
}

_X86_64 = {
    "io_setup": 206,
    "open": 2,
    "ioctl": 16,
    "fcntl": 72,
    "socket": 41,
    "clone": 56,
    "execve": 59,
    "syslog": 103,
    "mknod": 133,
    "uselib": 134,
    "personality": 135,
    "ustat": 136,
    "sysfs": 139,
    "vhangup": 153,
    "pivot_root": 155,
    "_sysctl": 156,
    "creat": 85,
    "chmod": 90,
    "fchmod": 91,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "create_module": 174,
    "init_module": 175,
    "delete_module": 176,
    "get_kernel_syms": 177,
    "query_module": 178,
    "quotactl": 179,
    "nfsservctl": 180,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "migrate_pages": 256,
    "unshare": 272,
    "vmsplice": 278,
    "move_pages": 279,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "openat": 257,
    "mknodat": 259,
    "fchmodat": 268,
    "setns": 308,
    "kcmp": 312,
    "finit_module": 313,
    "seccomp": 317,
    "memfd_create": 319,
    "kexec_file_load": 320,
    "bpf": 321,
    "execveat": 322,
    "userfaultfd": 323,
    # Capabilities, unix socket pairs, other processes' limits, and System V and POSIX
    # IPC: what a sandbox without namespaces of its own needs refused (direct mode).
    "capget": 125,
    "capset": 126,
    "socketpair": 53,
    "prlimit64": 302,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "shmdt": 67,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    # Another process's scheduling, a file's metadata by path, a file cut by its path:
    # what Landlock does not hold without namespaces (direct_rules.filter_rules).
    "setpriority": 141,
    "sched_setparam": 142,
    "sched_setscheduler": 144,
    "sched_setaffinity": 203,
    "sched_setattr": 314,
    "ioprio_set": 251,
    "truncate": 76,
    "setxattr": 188,
    "lsetxattr": 189,
    "getxattr": 191,
    "lgetxattr": 192,
    "listxattr": 194,
    "llistxattr": 195,
    "fsetxattr": 190,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    "utime": 132,
    "utimes": 235,
    "futimesat": 261,
    "utimensat": 280,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "fchownat": 260,
    "inotify_add_watch": 254,
    "kill": 62,
    **_COMMON,
}

_AARCH64 = {
    "io_setup": 0,
    "lookup_dcookie": 18,
    "fcntl": 25,
    "mknodat": 33,
    "ioctl": 29,
    "umount2": 39,
    "mount": 40,
    "pivot_root": 41,
    "nfsservctl": 42,
    "chroot": 51,
    "fchmod": 52,
    "fchmodat": 53,
    "openat": 56,
    "vhangup": 58,
    "quotactl": 60,
    "vmsplice": 75,
    "acct": 89,
    "personality": 92,
    "unshare": 97,
    "kexec_load": 104,
    "init_module": 105,
    "delete_module": 106,
    "clock_settime": 112,
    "syslog": 116,
    "ptrace": 117,
    "reboot": 142,
    "sethostname": 161,
    "setdomainname": 162,
    "settimeofday": 170,
    "socket": 198,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "clone": 220,
    "execve": 221,
    "swapon": 224,
    "swapoff": 225,
    "migrate_pages": 238,
    "move_pages": 239,
    "perf_event_open": 241,
    "fanotify_init": 262,
    "name_to_handle_at": 264,
    "open_by_handle_at": 265,
    "setns": 268,
    "kcmp": 272,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "finit_module": 273,
    "seccomp": 277,
    "memfd_create": 279,
    "bpf": 280,
    "execveat": 281,
    "userfaultfd": 282,
    "kexec_file_load": 294,
    "capget": 90,
    "capset": 91,
    "socketpair": 199,
    "prlimit64": 261,
    "shmget": 194,
    "shmat": 196,
    "shmctl": 195,
    "shmdt": 197,
    "semget": 190,
    "semop": 193,
    "semctl": 191,
    "semtimedop": 192,
    "msgget": 186,
    "msgsnd": 189,
    "msgrcv": 188,
    "msgctl": 187,
    "mq_open": 180,
    "mq_unlink": 181,
    "mq_timedsend": 182,
    "mq_timedreceive": 183,
    "mq_notify": 184,
    "mq_getsetattr": 185,
    "setpriority": 140,
    "sched_setparam": 118,
    "sched_setscheduler": 119,
    "sched_setaffinity": 122,
    "sched_setattr": 274,
    "ioprio_set": 30,
    "truncate": 45,
    "setxattr": 5,
    "lsetxattr": 6,
    "getxattr": 8,
    "lgetxattr": 9,
    "listxattr": 11,
    "llistxattr": 12,
    "fsetxattr": 7,
    "removexattr": 14,
    "lremovexattr": 15,
    "fremovexattr": 16,
    "utimensat": 88,
    "fchownat": 54,
    "fchown": 55,
    "inotify_add_watch": 27,
    "kill": 129,
    **_COMMON,
}

TABLES: Mapping[str, Mapping[str, int]] = {"x86_64": _X86_64, "aarch64": _AARCH64}
AUDIT_ARCH: Mapping[str, int] = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}

# ELF e_machine values, and os.uname()'s names for the same machines.
_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def native_arch() -> str:
    """The table this process's own calls use; ValueError where no table is known.

    Read from the running executable's ELF header (64-bit, little-endian, e_machine at
    18), not from uname: uname's machine follows the personality, and under PER_LINUX32
    (`linux32`, `setarch i686`, which the filter allows) a 64-bit x86_64 process is told
    "i686" while it still makes x86_64 calls. uname serves only where /proc is missing.
    """
    try:
        with open("/proc/self/exe", "rb") as exe:
            header = exe.read(20)
    except OSError:
        header = b""
    if len(header) == 20 and header[:4] == b"\x7fELF":
        machine = _ELF_MACHINES.get(int.from_bytes(header[18:20], "little"))
        if header[4:6] != b"\x02\x01" or machine is None:  # ELFCLASS64, ELFDATA2LSB
            raise ValueError(f"no system call table for this executable (ELF class "
                             f"{header[4]}, data {header[5]}, machine {header[18]})")
        return machine
    machine = _MACHINES.get(os.uname().machine)
    if machine is None or ctypes.sizeof(ctypes.c_void_p) != 8:
        raise ValueError(f"no system call table for {os.uname().machine} "
                         f"({8 * ctypes.sizeof(ctypes.c_void_p)}-bit process)")
    return machine


def number(name: str, arch: str | None = None) -> int:
    """The number of `name` on `arch` (the native one by default); KeyError if none."""
    return TABLES[arch or native_arch()][name]


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded on first use (importing this module does nothing), and the
    one load every part of lnk-sandbox calls it through: each C function's restype and
    argtypes are set by the one module that calls it."""
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        # A call's result is a long (an fd, a size). macOS's host and log watch load the
        # C library here too and never call syscall(2): its restype is set where the
        # symbol is there, never by asking which OS this is (test_layers: the chooser
        # alone reads the platform).
        call = getattr(lib, "syscall", None)
        if call is not None:
            call.restype = ctypes.c_long
        _libc = lib
    return _libc


def syscall(name: str, *args: object) -> int:
    """Make the native call `name`; its result, or OSError with the kernel's errno.

    An int argument goes as a C long; anything else (a pointer, `ctypes.byref(...)`)
    goes as it is.
    """
    wrapped = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = int(libc().syscall(ctypes.c_long(number(name)), *wrapped))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")
    return result
