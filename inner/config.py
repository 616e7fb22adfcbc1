"""The inner's configuration: one typed record, its wire form, and the reader of it.

The supervisor computes everything the inner applies (linux/confine.py; without
namespaces, linux/direct.py and direct_rules.py) and builds a `Config`; `encode` turns
it into the bytes handed over on an inherited fd; the inner, the compiled one
(confine.c) or this Python fallback (`decode`), only reads them. One record, one form,
two readers, each strict: a form either reader refuses exits 125.

The form (every integer little-endian; `str` and `blob` are a u32 length, then that
many bytes; a `str` holds no NUL, and is empty only as an argument after the program):

    "LNKINNER"  u32 VERSION  u32 status_fd  u32 flags
    if flags & DIRECT:    u32 parent                          the supervisor's pid
    if flags & REAPER:    u32 reaper_fd       (DIRECT only: the pipe the reaper reads)
    u32 argc, str * argc                                      argv, argc >= 1
    if flags & SECCOMP:   u32 arch, blob program, blob fallback   (fallback empty: none)
    if flags & LANDLOCK:  u32 n, (u64 handled, u64 net, u64 scoped, u32 attr size) * n,
                          u64 file_rights,
                          u32 n, (str path, u64 rights) * n,
                          u32 n, (str folder, u32 m, str hidden * m) * n
    u32 n, (str name, u32 resource, u64 value) * n            rlimits
    if flags & FILE:      str op, str path, u64 limit   (0 unless flags & FILE_LIMIT)

and nothing after. The flags not named below are refused. The form is canonical: what
either reader takes, `encode` writes again byte for byte. Version 2 added what a run
without namespaces needs (supervisor/linux/direct.py): DIRECT and its parent, the network
rights of each ABI, LANDLOCK_NOFOLLOW and LANDLOCK_OPTIONAL; then REAPER.

Facts: a program is sock_filter bytes (8 per instruction, 1 to 4096 of them); the
reader copies nothing it has not bounded first, and a count is checked against the bytes
left before anything is made for it, so a hostile length asks for nothing.

It imports nothing but `os` (the inner's start pays for every import), and does nothing
at import time.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

MAGIC = b"LNKINNER"
VERSION = 2
LARGEST = 64 << 20  # bytes: more is no configuration the supervisor writes

WATCH_MOUNTS = 1 << 0
SECCOMP = 1 << 1
LISTENER = 1 << 2
LANDLOCK = 1 << 3
LANDLOCK_REQUIRED = 1 << 4
FILE = 1 << 5
FILE_LIMIT = 1 << 6
DIRECT = 1 << 7
LANDLOCK_NOFOLLOW = 1 << 8
LANDLOCK_OPTIONAL = 1 << 9
REAPER = 1 << 10
FLAGS = (WATCH_MOUNTS | SECCOMP | LISTENER | LANDLOCK | LANDLOCK_REQUIRED | FILE | FILE_LIMIT
         | DIRECT | LANDLOCK_NOFOLLOW | LANDLOCK_OPTIONAL | REAPER)

BPF_INSN = 8
BPF_MAXINSNS = 4096
ATTR_SIZES = (8, 16, 24)  # landlock_ruleset_attr at ABI 1, 4 and 6
ABI_ROW = 28  # bytes of one ABI's row in the form
PID_LIMIT = 1 << 22  # PID_MAX_LIMIT: no pid is larger on any kernel
MAX_ABIS = 64
FILE_OPS = ("read", "write")
U32 = (1 << 32) - 1
U64 = (1 << 64) - 1


class _Record:
    """Plain frozen-by-convention data: equal when every field is, printed with them."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Record) and type(other) is type(self) \
            and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({shown})"


class Seccomp(_Record):
    """The filter: `program`, sock_filter bytes the supervisor built for `arch` (its
    AUDIT_ARCH_* value: an inner of another architecture refuses it); with `listener`,
    installed with NEW_LISTENER and its listener handed over at once; `fallback`, the
    program installed instead, without one, where another filter's listener holds the
    chain (EBUSY); None: that refuses the launch (learn needs the listener)."""

    __slots__ = ("arch", "fallback", "listener", "program")
    arch: int
    program: bytes
    listener: bool
    fallback: bytes | None

    def __init__(self, arch: int, program: bytes, listener: bool = False,
                 fallback: bytes | None = None) -> None:
        self.arch, self.program, self.listener, self.fallback = (
            arch, program, listener, fallback)


class Landlock(_Record):
    """The rules: `rules`, (path, rights as LANDLOCK_ACCESS_FS_* bits), each path opened
    O_PATH and granted its rights, less those the kernel's ABI lacks and, on a file,
    those a file cannot hold (`file_rights` are the ones it may). `abis[i]` is ABI i+1's
    (filesystem rights handled, network rights handled, scopes, size of
    landlock_ruleset_attr); a newer kernel takes the last. `closed`: (folder, hidden
    paths) for a read grant listed entry by entry inside (inner/landlock.py,
    close_hidden). `required`: no Landlock here refuses the launch (a program list)
    rather than being said once.

    Without namespaces the paths are the host's own (supervisor/linux/direct_rules.py):
    `nofollow`, each opened one component at a time from `/` with no link followed
    (/proc's paths as they are); `optional`, each may be gone, or a link on its way, by
    the time the inner opens it, and is then in no rule (the supervisor listed them)."""

    __slots__ = ("abis", "closed", "file_rights", "nofollow", "optional", "required",
                 "rules")
    required: bool
    abis: tuple[tuple[int, int, int, int], ...]
    file_rights: int
    rules: tuple[tuple[str, int], ...]
    closed: tuple[tuple[str, tuple[str, ...]], ...]
    nofollow: bool
    optional: bool

    def __init__(self, required: bool, abis: Sequence[tuple[int, int, int, int]],
                 file_rights: int, rules: Sequence[tuple[str, int]],
                 closed: Sequence[tuple[str, Sequence[str]]] = (), *,
                 nofollow: bool = False, optional: bool = False) -> None:
        self.required, self.abis, self.file_rights = required, tuple(abis), file_rights
        self.rules = tuple(rules)
        self.closed = tuple((folder, tuple(hidden)) for folder, hidden in closed)
        self.nofollow, self.optional = nofollow, optional


class Rlimit(_Record):
    """One setrlimit, soft and hard alike: `resource` its RLIMIT_* number, `name` how a
    failure names it."""

    __slots__ = ("name", "resource", "value")
    name: str
    resource: int
    value: int

    def __init__(self, name: str, resource: int, value: int) -> None:
        self.name, self.resource, self.value = name, resource, value


class FileOp(_Record):
    """A harness's file read or write (inner/fileop.py), done instead of the exec. The
    Python inner's alone: the supervisor starts that one for it."""

    __slots__ = ("limit", "op", "path")
    op: str
    path: str
    limit: int | None

    def __init__(self, op: str, path: str, limit: int | None = None) -> None:
        self.op, self.path, self.limit = op, path, limit


class Config(_Record):
    """All the inner applies, in its order (inner/main.py). `watch_mounts`: hand over
    the mount table before the go (linux/mount_watch.py). `parent`: a run without
    namespaces, started by the supervisor itself, whose pid this is (step 0: the
    parent-death signal, the parent looked at, no_new_privs, every capability dropped);
    None: started by bwrap. `reaper`: with `parent`, the fd of a pipe only the
    supervisor writes, read by the reaper the inner leaves behind in the sandbox's
    Landlock domain (inner/reaper.py), which ends the sandbox when the supervisor is
    gone."""

    __slots__ = (
        "argv",
        "file",
        "landlock",
        "parent",
        "reaper",
        "rlimits",
        "seccomp",
        "status_fd",
        "watch_mounts",
    )
    status_fd: int
    argv: tuple[str, ...]
    parent: int | None
    reaper: int | None
    seccomp: Seccomp | None
    landlock: Landlock | None
    rlimits: tuple[Rlimit, ...]
    watch_mounts: bool
    file: FileOp | None

    def __init__(self, status_fd: int, argv: Sequence[str], *, seccomp: Seccomp | None = None,
                 landlock: Landlock | None = None, rlimits: Sequence[Rlimit] = (),
                 watch_mounts: bool = False, file: FileOp | None = None,
                 parent: int | None = None, reaper: int | None = None) -> None:
        self.status_fd, self.argv = status_fd, tuple(argv)
        self.seccomp, self.landlock, self.rlimits = seccomp, landlock, tuple(rlimits)
        self.watch_mounts, self.file, self.parent = watch_mounts, file, parent
        self.reaper = reaper

    def replace(self, **changes: object) -> Config:
        """A copy with `changes` (the launch adds argv and the status fd last)."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        status_fd, argv = fields.pop("status_fd"), fields.pop("argv")
        return Config(status_fd, argv, **fields)

    def encode(self) -> bytes:
        """The wire form; ValueError for what no reader would take (a NUL in a name,
        a number out of range), before anything is started."""
        return _encode(self)


# -- writing ---------------------------------------------------------------------------


def _u32(value: int) -> bytes:
    if not 0 <= value <= U32:
        raise ValueError(f"{value} does not fit in 32 bits")
    return value.to_bytes(4, "little")


def _u64(value: int) -> bytes:
    if not 0 <= value <= U64:
        raise ValueError(f"{value} does not fit in 64 bits")
    return value.to_bytes(8, "little")


def _blob(data: bytes) -> bytes:
    return _u32(len(data)) + data


def _str(text: str, what: str) -> bytes:
    data = os.fsencode(text)
    if b"\0" in data:
        raise ValueError(f"{what} {text!r} holds a NUL byte, which no program or path can")
    return _blob(data)


def _program(program: bytes, what: str) -> bytes:
    count, rest = divmod(len(program), BPF_INSN)
    if rest or not 0 < count <= BPF_MAXINSNS:
        raise ValueError(f"{what}: {len(program)} bytes is not 1 to 4096 instructions")
    return _blob(program)


def _row_fits(net: int, scoped: int, size: int) -> bool:
    """Whether an ABI's row can be said in its landlock_ruleset_attr: the network rights
    are its second field (16 bytes on), the scopes its third (24): a right the size
    leaves out would be silently not handled."""
    return size in ATTR_SIZES and not (net and size < 16) and not (scoped and size < 24)


def _encode(config: Config) -> bytes:
    flags = WATCH_MOUNTS if config.watch_mounts else 0
    if not config.argv:
        raise ValueError("the command is empty")
    if config.argv[0] == "":
        raise ValueError("the program's name is empty")
    out = []
    if config.parent is not None:
        if not 0 < config.parent <= PID_LIMIT:
            raise ValueError(f"the supervisor's pid {config.parent}")
        flags |= DIRECT
        out.append(_u32(config.parent))
        if config.reaper is not None:
            if not 3 <= config.reaper <= (1 << 30):
                raise ValueError(f"the reaper's pipe as fd {config.reaper}")
            flags |= REAPER
            out.append(_u32(config.reaper))
    elif config.reaper is not None:
        raise ValueError("a reaper without namespaces only")
    out += [_u32(len(config.argv))] + [_str(a, "the argument") for a in config.argv]
    seccomp = config.seccomp
    if seccomp is not None:
        flags |= SECCOMP | (LISTENER if seccomp.listener else 0)
        if seccomp.fallback is not None and not seccomp.listener:
            raise ValueError("a fallback filter is for a filter with a listener")
        out += [_u32(seccomp.arch), _program(seccomp.program, "the filter"),
                _program(seccomp.fallback, "the fallback filter")
                if seccomp.fallback is not None else _u32(0)]
    rules = config.landlock
    if rules is not None:
        flags |= LANDLOCK | (LANDLOCK_REQUIRED if rules.required else 0)
        flags |= (LANDLOCK_NOFOLLOW if rules.nofollow else 0) | (
            LANDLOCK_OPTIONAL if rules.optional else 0)
        if not 0 < len(rules.abis) <= MAX_ABIS:
            raise ValueError(f"{len(rules.abis)} Landlock ABIs described")
        out.append(_u32(len(rules.abis)))
        for handled, net, scoped, size in rules.abis:
            if not _row_fits(net, scoped, size):
                raise ValueError(f"a landlock_ruleset_attr of {size} bytes, with network "
                                 f"rights {net:#x} and scopes {scoped:#x}")
            out += [_u64(handled), _u64(net), _u64(scoped), _u32(size)]
        out += [_u64(rules.file_rights), _u32(len(rules.rules))]
        known = rules.abis[-1][0]
        for path, rights in rules.rules:
            if not path or rights & ~known:
                raise ValueError(f"rights {rights:#x} on {path!r}: no path, or a right no "
                                 "ABI described has")
            out += [_str(path, "the Landlock rule's path"), _u64(rights)]
        out.append(_u32(len(rules.closed)))
        for folder, hidden in rules.closed:
            out += [_str(folder, "the closed folder"), _u32(len(hidden))]
            out += [_str(h, "the hidden path") for h in hidden]
    out.append(_u32(len(config.rlimits)))
    for limit in config.rlimits:
        out += [_str(limit.name, "the limit"), _u32(limit.resource), _u64(limit.value)]
    if config.file is not None:
        flags |= FILE | (FILE_LIMIT if config.file.limit is not None else 0)
        if config.file.op not in FILE_OPS:
            raise ValueError(f"no file operation {config.file.op!r}")
        out += [_str(config.file.op, "the file operation"),
                _str(config.file.path, "the file's path"), _u64(config.file.limit or 0)]
    if config.status_fd < 3:
        raise ValueError(f"the status socket as fd {config.status_fd}")
    data = b"".join([MAGIC, _u32(VERSION), _u32(config.status_fd), _u32(flags), *out])
    if len(data) > LARGEST:
        raise ValueError(f"a configuration of {len(data)} bytes")
    return data


# -- reading ---------------------------------------------------------------------------


class _Reader:
    """Bounded reads of `data`; ValueError at the first byte short or out of place."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if size > len(self.data) - self.at:
            raise ValueError(f"it ends at byte {len(self.data)}, {size} more were due at "
                             f"{self.at}")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "little")

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def count(self, smallest: int) -> int:
        """A count of items of at least `smallest` bytes each, bounded by what is left."""
        n = self.u32()
        if n * smallest > len(self.data) - self.at:
            raise ValueError(f"{n} items at byte {self.at} cannot fit in what is left")
        return n

    def blob(self) -> bytes:
        return self.take(self.count(1))

    def text(self, what: str, *, empty: bool = False) -> str:
        """A str; `empty`: it may be (an argument after the program's name)."""
        data = self.blob()
        if (not data and not empty) or b"\0" in data:
            raise ValueError(f"{what} at byte {self.at} is empty or holds a NUL")
        return os.fsdecode(data)

    def program(self, what: str) -> bytes:
        data = self.blob()
        if not data or len(data) % BPF_INSN or len(data) > BPF_INSN * BPF_MAXINSNS:
            raise ValueError(f"{what} of {len(data)} bytes")
        return data


def decode(data: bytes) -> Config:
    """The record `data` holds; ValueError saying where it is malformed."""
    if len(data) > LARGEST:
        raise ValueError(f"{len(data)} bytes")
    read = _Reader(data)
    if read.take(len(MAGIC)) != MAGIC:
        raise ValueError("it does not start as the inner's configuration")
    version = read.u32()
    if version != VERSION:
        raise ValueError(f"it is of version {version}, this inner reads {VERSION}")
    status_fd, flags = read.u32(), read.u32()
    if status_fd < 3 or status_fd > (1 << 30):
        raise ValueError(f"the status socket as fd {status_fd}")
    if flags & ~FLAGS or (flags & LISTENER and not flags & SECCOMP) or (
            flags & (LANDLOCK_REQUIRED | LANDLOCK_NOFOLLOW | LANDLOCK_OPTIONAL)
            and not flags & LANDLOCK) or (flags & FILE_LIMIT and not flags & FILE) or (
            flags & REAPER and not flags & DIRECT):
        raise ValueError(f"flags {flags:#x}")
    parent = None
    if flags & DIRECT:
        parent = read.u32()
        if not 0 < parent <= PID_LIMIT:
            raise ValueError(f"the supervisor's pid {parent}")
    reaper = None
    if flags & REAPER:
        reaper = read.u32()
        if not 3 <= reaper <= (1 << 30):
            raise ValueError(f"the reaper's pipe as fd {reaper}")
    argc = read.count(4)
    if argc == 0:
        raise ValueError("the command is empty")
    argv = (read.text("the program"),
            *(read.text("an argument", empty=True) for _ in range(argc - 1)))
    seccomp = None
    if flags & SECCOMP:
        arch, program = read.u32(), read.program("the filter")
        fallback = read.blob()
        if fallback and (not flags & LISTENER or len(fallback) % BPF_INSN
                         or len(fallback) > BPF_INSN * BPF_MAXINSNS):
            raise ValueError(f"a fallback filter of {len(fallback)} bytes")
        seccomp = Seccomp(arch, program, bool(flags & LISTENER), fallback or None)
    landlock = None
    if flags & LANDLOCK:
        abis = tuple((read.u64(), read.u64(), read.u64(), read.u32())
                     for _ in range(read.count(ABI_ROW)))
        if not 0 < len(abis) <= MAX_ABIS or not all(_row_fits(*a[1:]) for a in abis):
            raise ValueError(f"the Landlock ABIs described: {abis}")
        file_rights = read.u64()
        rules = tuple((read.text("a rule's path"), read.u64()) for _ in range(read.count(12)))
        if any(rights & ~abis[-1][0] for _, rights in rules):
            raise ValueError("a rule holds rights no ABI described has")
        closed = tuple((read.text("a closed folder"),
                        tuple(read.text("a hidden path") for _ in range(read.count(4))))
                       for _ in range(read.count(8)))
        landlock = Landlock(bool(flags & LANDLOCK_REQUIRED), abis, file_rights, rules, closed,
                            nofollow=bool(flags & LANDLOCK_NOFOLLOW),
                            optional=bool(flags & LANDLOCK_OPTIONAL))
    rlimits = tuple(Rlimit(read.text("a limit's name"), read.u32(), read.u64())
                    for _ in range(read.count(16)))
    if any(limit.resource >= 64 for limit in rlimits):
        raise ValueError("a limit's resource number is out of range")
    file = None
    if flags & FILE:
        op, path, limit = read.text("the file operation"), read.text("the file's path"), read.u64()
        if op not in FILE_OPS or (limit and not flags & FILE_LIMIT):
            raise ValueError(f"the file operation {op!r}, limit {limit}")
        file = FileOp(op, path, limit if flags & FILE_LIMIT else None)
    if read.at != len(data):
        raise ValueError(f"{len(data) - read.at} bytes after its end")
    return Config(status_fd, argv, seccomp=seccomp, landlock=landlock, rlimits=rlimits,
                  watch_mounts=bool(flags & WATCH_MOUNTS), file=file, parent=parent,
                  reaper=reaper)


def read(fd: int) -> Config:
    """The whole configuration from `fd`, which is closed after; ValueError when it is
    malformed or larger than any the supervisor writes."""
    chunks = []
    size = 0
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > LARGEST:
            os.close(fd)
            raise ValueError(f"more than {LARGEST} bytes")
        chunks.append(chunk)
    os.close(fd)
    return decode(b"".join(chunks))
