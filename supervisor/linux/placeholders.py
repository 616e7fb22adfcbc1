"""Placeholders: empty folders (or files) made for a run where a dot file is missing.

A mount covers only what is there, and a write grant otherwise lets the program make a
`.git` that was not: so the launch makes an empty one on the host, the plan binds it
read-only, and it is removed after the run, unless a run still alive holds it, since
removing one another sandbox has mounted over undoes that mount there.

Facts this relies on:
- rmdir or unlink of a path that is a mount point in *another* mount namespace succeeds
  (Linux 3.18+) and detaches those mounts: the host side can undo a live sandbox's
  read-only bind, so a placeholder goes only while no live run holds it;
- flock(2) locks belong to the open file description: a killed holder's lock is gone
  with its last descriptor, and `LOCK_EX` waiters are not served first come, first
  served (measured in benchmarks/placeholder_lock.py);
- /proc/PID/stat field 22 is the process's start time in clock ticks since boot: with
  the pid it names one process for the boot, so a reused pid is not taken for a holder.

The state (`$LNK_HOME/placeholders`) lists each placeholder with its device, inode and
the runs holding it (pid, start time and a number per run in that process), one line
each, read and rewritten whole under one lock (`$LNK_HOME/placeholders.lock`) and
written atomically (temp file, rename; fsync'ed first when it completes folders just
made, which are listed before they are made, so a kill in between leaves nothing unlisted).
A line format, not JSON: loading it is on every start. The lock covers the whole
read-decide-write, and is not narrowed: the record weighed the cost (about 1 ms a
start) against the states narrowing would add.

A placeholder goes only while it is the same inode, still empty, and held by no live
run. Same inode means the same device and inode number: a folder removed and made again
meanwhile may get the number back, and an empty one is then removed as ours. One that
is not empty any more is the person's now and forgotten, but for one holding only other
placeholders, which goes with them. Runs that died without releasing (a supervisor
killed with SIGKILL) are pruned at the next start. Runs with different `$LNK_HOME`s do
not see each other's placeholders: each would take the other's for the person's own
folder, and leave it.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
import time
from typing import Literal

from ..errors import LaunchError
from ..host_files import PrivateFolder
from ..state import existing_folder, private_folder
from .pinning import FoundLink, walk
from .proc_stat import process_start

# How long a placeholder that may linger stays after the last run holding it: the
# runs of one task (an agent's tool calls) follow each other by seconds or minutes, and
# each would otherwise make and remove the same empty folders (an rmdir costs 1 to 2 ms
# of wall on ext4 here). It stays as a holder `~DEADLINE` (seconds since the epoch).
LINGER_SECONDS = 600
STATE_NAME = "placeholders"
LOCK_NAME = "placeholders.lock"
TEMP_NAME = STATE_NAME + ".tmp"
_HEADER = b"lnk-placeholders 1"
_runs = itertools.count(1)

Kind = Literal["file", "folder", "socket"]


# Plain classes, not dataclasses or NamedTuples: this module is imported on every start,
# and making a dataclass costs about 0.4 ms here, a NamedTuple 0.1 ms.


class Wanted:
    """A path the plan binds read-only that may need a placeholder: made when missing,
    joined when it is a registered placeholder, left alone when it is the person's.
    `content` is what a file placeholder holds (empty by default): a file the tool reads
    must read as harmless while held, and for some only a content does (git dies on an
    empty `commondir`; one holding `.` names the git directory itself). `base` is the
    folder it lies in that must be there (the grant's top; by default its own folder):
    the folders between it and the path, which the plan saw there, may be another run's
    placeholders, removed at that run's end after this start planned, so each missing one
    is made again (and held) for this run. `linger`: the placeholder may stay
    LINGER_SECONDS after the last run holding it ends, for the next run to join rather
    than make again (dotfiles.Protected.stays says which). Immutable, compared by value."""

    __slots__ = ("base", "content", "kind", "linger", "path")
    path: str
    kind: Kind
    content: bytes
    base: str
    linger: bool

    def __init__(self, path: str, kind: Kind, content: bytes = b"", *,
                 base: str | None = None, linger: bool = False) -> None:
        folder = os.path.dirname(path)
        if base is None or not (folder == base or folder.startswith(base.rstrip("/") + "/")):
            base = folder
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "linger", linger)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Wanted is immutable: {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Wanted) and (
            self.path, self.kind, self.content, self.linger) == (
            other.path, other.kind, other.content, other.linger)

    def __hash__(self) -> int:
        return hash((self.path, self.kind, self.content, self.linger))

    def __repr__(self) -> str:
        extra = f", {self.content!r}" if self.content else ""
        extra += ", linger=True" if self.linger else ""
        return f"Wanted({self.path!r}, {self.kind!r}{extra})"

    def between(self) -> list[str]:
        """The folders between `base` and the path, outermost first."""
        folders = []
        folder = os.path.dirname(self.path)
        while folder != self.base:
            folders.append(folder)
            folder = os.path.dirname(folder)
        return folders[::-1]


class _Entry:
    __slots__ = ("content", "device", "holders", "inode", "kind", "path")

    def __init__(self, path: str, kind: Kind, device: int, inode: int,
                 holders: list[str], *, content: bytes = b"") -> None:
        self.path, self.kind, self.device, self.inode = path, kind, device, inode
        self.holders = holders
        self.content = content

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Entry) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


def _escape(path: str) -> bytes:
    return os.fsencode(path).replace(b"\\", b"\\\\").replace(b"\n", b"\\n")


def _unescape(data: bytes) -> str:
    out = bytearray()
    chars = iter(data)
    for byte in chars:
        if byte == 0x5C:  # a backslash: the next byte is \\ or n
            following = next(chars, 0x5C)
            out.append(0x0A if following == 0x6E else following)
        else:
            out.append(byte)
    return os.fsdecode(bytes(out))


def _parse(data: bytes) -> dict[str, _Entry]:
    """The state's entries; lines that do not parse are forgotten (left on disk)."""
    lines = data.split(b"\n")
    entries: dict[str, _Entry] = {}
    if lines[0] != _HEADER:
        return entries
    for line in lines[1:]:
        # d, f and s (a socket): `KIND DEV INO HOLDERS PATH`; c, a file with content:
        # `c DEV INO HOLDERS HEX PATH` (a start that knew only d and f forgets the rest).
        parts = line.split(b" ", 5 if line.startswith(b"c ") else 4)
        if len(parts) not in (5, 6) or parts[0] not in (b"d", b"f", b"c", b"s"):
            continue
        try:
            device, inode = int(parts[1]), int(parts[2])
            content = bytes.fromhex(parts[4].decode()) if parts[0] == b"c" else b""
        except ValueError:
            continue
        if (parts[0] == b"c") != (len(parts) == 6):
            continue
        holders = [] if parts[3] == b"-" else parts[3].decode("ascii", "replace").split(",")
        path = _unescape(parts[-1])
        kind: Kind = "folder" if parts[0] == b"d" else "socket" if parts[0] == b"s" \
            else "file"
        entries[path] = _Entry(path, kind, device, inode, holders, content=content)
    return entries


_LETTERS: dict[Kind, bytes] = {"folder": b"d", "file": b"f", "socket": b"s"}


def _render(entries: dict[str, _Entry]) -> bytes:
    lines = [_HEADER]
    for entry in entries.values():
        holders = ",".join(entry.holders).encode() or b"-"
        if entry.content:
            lines.append(b"c %d %d %s %s %s" % (entry.device, entry.inode, holders,
                                                entry.content.hex().encode(),
                                                _escape(entry.path)))
            continue
        lines.append(b"%s %d %d %s %s" % (_LETTERS[entry.kind],
                                          entry.device, entry.inode, holders,
                                          _escape(entry.path)))
    return b"\n".join(lines) + b"\n"


class _Parents:
    """Folders opened one component at a time from `/`, no link followed, kept open for
    one locked section: a placeholder is made and removed through its folder's fd."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}

    def open(self, folder: str) -> int:
        if folder in self.fds:
            return self.fds[folder]
        try:
            fd = walk(folder, folder=True)
        except FoundLink as err:
            raise _link(str(err.filename)) from None
        self.fds[folder] = fd
        return fd

    def forget(self, folder: str) -> None:
        """Drop a folder removed in this section, and what was opened below it: a
        placeholder made there again (.github for .github/hooks) is a new folder, and a
        descriptor of the old one would make its contents in a removed folder."""
        for path in [p for p in self.fds if p == folder or p.startswith(folder + "/")]:
            os.close(self.fds.pop(path))

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _link(path: str) -> LaunchError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return LaunchError(
        f"{path} is a link (to {target}) where a dot file is held read-only for the run; "
        "the program could point it elsewhere, so the launch is refused",
        hint="remove the link, or list its folder in files.write_dot_files",
    )


class Placeholders:
    """The placeholder state of one `$LNK_HOME`; `last_wait` is the last lock wait (s)."""

    def __init__(self, lnk_home: str):
        self.lnk_home = lnk_home
        self.state_path = os.path.join(lnk_home, STATE_NAME)
        self.last_wait = 0.0
        self._home: PrivateFolder | None = None  # $LNK_HOME, held open while locked

    # -- the locked section -----------------------------------------------------------------

    def _locked(self) -> int:
        """The lock taken: its fd; `$LNK_HOME` stays open (self._home) until `_unlock`,
        and every file of the state is opened through it (host_files)."""
        home = private_folder(self.lnk_home)
        try:
            fd = home.open(LOCK_NAME, os.O_RDWR | os.O_CREAT)
        except BaseException:
            home.close()
            raise
        started = time.perf_counter()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.last_wait = time.perf_counter() - started
            home.unlink(TEMP_NAME)  # only a writer killed mid-write leaves one
        except BaseException:
            os.close(fd)
            home.close()
            raise
        self._home = home
        return fd

    def _unlock(self, fd: int) -> None:
        os.close(fd)
        if self._home is not None:
            self._home.close()
            self._home = None

    def _read(self) -> bytes | None:
        """The state's bytes as they are, None when there is no state."""
        if self._home is not None:
            return self._home.read(STATE_NAME, limit=1 << 30)
        home = existing_folder(self.lnk_home)
        if home is None:
            return None
        with home:
            return home.read(STATE_NAME, limit=1 << 30)

    def _load(self) -> dict[str, _Entry]:
        return _parse(self._read() or b"")

    def _save(self, entries: dict[str, _Entry], before: bytes, *, made: bool) -> bytes:
        """Replace the state whole (temp file, rename); the new bytes.

        fsync'ed first when it completes folders just made: a crash must not leave one
        on disk that no list names. A write that only adds or drops holders, drops
        entries or lists what is about to be made is not: after a crash every run is
        dead, an entry left stale is judged again by its inode, and one about to be
        made was not yet. The temp file has one name: only the lock's holder writes it.
        """
        assert self._home is not None, "the state is written only under the lock"
        data = _render(entries)
        if data == before:
            return data
        if not entries:
            self._home.unlink(STATE_NAME)
            return b""
        self._home.write_atomically(STATE_NAME, data, sync=made, temp=TEMP_NAME)
        return data

    def _prune(self, entries: dict[str, _Entry], parents: _Parents,
               alive: dict[str, bool]) -> None:
        """Remove each placeholder no live run holds (deepest first).

        Whether any holder lives is all that decides, so holders are checked oldest first
        up to the first one alive, and the dead ones met on the way dropped: a /proc
        read each, inside the lock, is what a section with many holders would cost.
        """
        for entry in entries.values():
            for index, holder in enumerate(entry.holders):
                if _holder_alive(holder, alive):
                    del entry.holders[:index]
                    break
            else:
                entry.holders.clear()
        for path in sorted(entries, key=lambda p: p.count("/"), reverse=True):
            entry = entries[path]
            if entry.holders:
                continue
            if _remove(entry, entries, parents):
                del entries[path]

    # -- holding and releasing ----------------------------------------------------------------

    def hold(self, wanted: list[Wanted]) -> Held:
        """Make or join the placeholders of `wanted`, and prune dead runs' ones.

        LaunchError for a link where a placeholder goes; the rest as OSError. A start
        with nothing wanted and no state skips the lock: there is nothing to prune.
        """
        held = Held(self, f"{_this_process()}:{next(_runs)}")
        if not wanted and not os.path.exists(self.state_path):
            return held
        fd = self._locked()
        parents = _Parents()
        try:
            before = self._read() or b""
            entries = _parse(before)
            self._prune(entries, parents, {})
            try:
                to_make: list[Wanted] = []
                for item in wanted:
                    # A folder above it that the plan saw, gone since: another run's
                    # placeholder which that run's end removed, or a dead run's which the
                    # prune just now did. Made again, for this run.
                    for folder in _gone_above(item, to_make, parents):
                        entries.pop(folder, None)
                        to_make.append(Wanted(folder, "folder", linger=item.linger))
                    # A folder made for the run just before (.github for .github/hooks)
                    # holds nothing yet: what goes in it is made too.
                    if any(os.path.dirname(item.path) == made.path for made in to_make):
                        entries.pop(item.path, None)
                        to_make.append(item)
                        continue
                    info = _lstat_in(parents, item.path)
                    entry = entries.pop(item.path, None)
                    if info is None:
                        to_make.append(item)  # (a listed one gone since is made again)
                    elif entry is not None and (info.st_dev, info.st_ino) == (
                            entry.device, entry.inode):
                        entry.holders.append(held.token)
                        entries[item.path] = entry
                        held.paths.append(item.path)
                        if item.linger:
                            held.lingering.append(item.path)
                    # else: the person's own (or replaced since): bound, never removed
                if to_make:
                    # Listed before made, identity unknown: a kill between the mkdir and
                    # the next write leaves an entry the next start can prune.
                    for item in to_make:
                        entries[item.path] = _Entry(item.path, item.kind, 0, 0, [held.token],
                                                    content=item.content)
                    before = self._save(entries, before, made=False)
                    for item in to_make:
                        if _make(entries[item.path], parents):
                            held.paths.append(item.path)
                            if item.linger:
                                held.lingering.append(item.path)
                        else:
                            del entries[item.path]  # made meanwhile, not by a run: theirs
            except BaseException:
                # Refused half-way: what this start made goes again, nothing is held.
                for entry in entries.values():
                    entry.holders = [h for h in entry.holders if h != held.token]
                self._prune(entries, parents, {})
                self._save(entries, before, made=False)
                raise
            self._save(entries, before, made=bool(to_make))
        except OSError as err:
            raise LaunchError(f"cannot hold the missing dot files for the run: {err}",
                              errno=err.errno) from None
        finally:
            parents.close()
            self._unlock(fd)
        return held

    def release(self, token: str, lingering: tuple[str, ...] = ()) -> None:
        """Drop `token`'s holds and remove what nobody holds any more; what is in
        `lingering` (paths `token` held) stays LINGER_SECONDS more, held by `~DEADLINE`."""
        fd = self._locked()
        parents = _Parents()
        try:
            before = self._read()
            if before is None:
                return
            entries = _parse(before)
            stay = f"~{int(time.time()) + LINGER_SECONDS}"
            for path, entry in list(entries.items()):
                held = token in entry.holders
                entry.holders = [h for h in entry.holders if h != token]
                if held and path in lingering:
                    entry.holders = [h for h in entry.holders if not h.startswith("~")]
                    if _only_placeholders(entry, entries, parents):
                        entry.holders.append(stay)
                    elif not entry.holders:
                        del entries[path]  # something else is in it: the person's now
            self._prune(entries, parents, {})
            self._save(entries, before, made=False)
        finally:
            parents.close()
            self._unlock(fd)

    def entries(self) -> dict[str, tuple[Kind, int, int, tuple[str, ...]]]:
        """The state as it is (for tests and `check`): path -> kind, dev, ino, holders."""
        return {p: (e.kind, e.device, e.inode, tuple(e.holders))
                for p, e in self._load().items()}


class Held:
    """One run's holds (`paths`, under `token`); `release()` once the sandbox ended."""

    def __init__(self, placeholders: Placeholders, token: str) -> None:
        self.placeholders = placeholders
        self.token = token
        self.paths: list[str] = []
        self.lingering: list[str] = []  # paths that may stay after the run (Wanted.linger)
        self.released = False

    def release(self) -> None:
        """Never raises for the state: the run's own outcome matters more, and the next
        start prunes what this one could not (its process will be gone)."""
        if self.released:
            return
        self.released = True
        if not self.paths and not os.path.exists(self.placeholders.state_path):
            return
        try:
            self.placeholders.release(self.token, tuple(self.lingering))
        except OSError as err:
            from ..events import say

            say(f"could not remove the placeholders of this run ({err}); the next start "
                "removes them")


_this: tuple[int, str] | None = None


def _pid_namespace() -> str:
    """This process's pid namespace, as its inode: a pid means something only there."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _this_process() -> str:
    """`pid:start.namespace` of this process, read once per process (a fork reads it
    again). A holder from another pid namespace (a container sharing the project) is
    never judged gone: its pid names another process here, or none."""
    global _this
    pid = os.getpid()
    if _this is None or _this[0] != pid:
        _this = (pid, f"{pid}:{process_start(pid)}.{_pid_namespace()}")
    return _this[1]


def _holder_alive(token: str, alive: dict[str, bool]) -> bool:
    if token.startswith("~"):  # a placeholder lingering after its last run, until then
        try:
            return time.time() < int(token[1:])
        except ValueError:
            return False
    pid_text, _, rest = token.partition(":")
    stamp = rest.partition(":")[0]
    key = f"{pid_text}:{stamp}"
    if key == _this_process():
        return True
    start, _, namespace = stamp.partition(".")
    if namespace and namespace != _this_process().rpartition(".")[2]:
        return True
    if key not in alive:
        try:
            pid = int(pid_text)
        except ValueError:
            alive[key] = False
        else:
            alive[key] = process_start(pid) == start
    return alive[key]


def _lstat(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _lstat_quiet(parents: _Parents, path: str) -> os.stat_result | None:
    """lstat through the folder's descriptor; None for missing, whatever the reason."""
    folder, name = os.path.split(path)
    try:
        return _lstat(parents.open(folder), name)
    except (OSError, LaunchError):
        return None


def _gone_above(item: Wanted, to_make: list[Wanted], parents: _Parents) -> list[str]:
    """The folders between `item`'s base and it, outermost first, that are missing and
    not made for this run yet: the plan took them for folders that are there (another
    run's placeholders, which that run's end or this start's prune removed since), and
    they must be there again for the item to be held in them. Its base is never made: a
    grant's top gone is not ours to make again."""
    gone = []
    for folder in item.between():
        if any(made.path == folder for made in to_make):
            continue
        info = _lstat_quiet(parents, folder)
        if info is None:
            gone.append(folder)
        elif stat.S_ISLNK(info.st_mode):
            raise _link(folder)
    return gone


def _lstat_in(parents: _Parents, path: str) -> os.stat_result | None:
    folder, name = os.path.split(path)
    try:
        parent = parents.open(folder)
    except FileNotFoundError:
        raise LaunchError(f"{folder} no longer exists, so {path} cannot be held read-only "
                          "for the run", hint="run the command again") from None
    info = _lstat(parent, name)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise _link(path)
    return info


def _make(entry: _Entry, parents: _Parents) -> bool:
    """Make a listed placeholder and note its identity; False when something is there
    already (made meanwhile by someone else, outside the lock)."""
    folder, name = os.path.split(entry.path)
    parent = parents.open(folder)
    try:
        if entry.kind == "folder":
            os.mkdir(name, 0o755, dir_fd=parent)
        elif entry.kind == "socket":
            _make_socket(parent, name)
        else:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o644, dir_fd=parent)
            try:
                if entry.content:
                    os.write(fd, entry.content)
            finally:
                os.close(fd)
    except FileExistsError:
        if _lstat_in(parents, entry.path) is None:
            raise
        return False
    made = _lstat(parent, name)
    assert made is not None
    entry.device, entry.inode = made.st_dev, made.st_ino
    return True


def _remove(entry: _Entry, entries: dict[str, _Entry], parents: _Parents) -> bool:
    """Remove a placeholder nobody holds; True when it may be forgotten."""
    folder, name = os.path.split(entry.path)
    try:
        parent = parents.open(folder)
    except (OSError, LaunchError):
        return True  # its folder is gone or became a link: nothing of ours to remove
    info = _lstat(parent, name)
    if info is None:
        return True
    if (entry.device, entry.inode) == (0, 0):
        # Listed, then its maker was killed before noting what it made: removed when it
        # is what would have been made (an empty folder or file), else left as theirs.
        if _kind_of(info.st_mode) != entry.kind:
            return True
    elif (info.st_dev, info.st_ino) != (entry.device, entry.inode):
        return True
    try:
        if entry.kind == "folder":
            os.rmdir(name, dir_fd=parent)
            parents.forget(entry.path)
        elif (stat.S_ISREG(info.st_mode) and _holds_only(parent, name, entry.content,
                                                          info.st_size)) or (
                entry.kind == "socket" and stat.S_ISSOCK(info.st_mode)):
            os.unlink(name, dir_fd=parent)
        else:
            return True  # written to: the person's now
    except OSError as err:
        if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        # Not empty: kept while what is in it is only other placeholders (they go first).
        prefix = entry.path + "/"
        nested = [p for p in entries if p.startswith(prefix)]
        return not nested
    return True


def _kind_of(mode: int) -> Kind | None:
    return "folder" if stat.S_ISDIR(mode) else "socket" if stat.S_ISSOCK(mode) \
        else "file" if stat.S_ISREG(mode) else None


def _make_socket(parent: int, name: str) -> None:
    """A socket inode at `name` in the folder `parent`, no one listening, mode 0644: no
    execute bit for access(X_OK) to pass, even for root; opening it fails (ENXIO) rather
    than waiting as a pipe's would. bind(2) takes no folder descriptor: the name is
    reached through /proc/self/fd, the folder pinned; the mode is set through an O_PATH
    descriptor of what was made, never by a path a link could redirect."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as made:
        try:
            made.bind(f"/proc/self/fd/{parent}/{name}")
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), name) from None
            raise
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.chmod(f"/proc/self/fd/{fd}", 0o644)
    finally:
        os.close(fd)


def _only_placeholders(entry: _Entry, entries: dict[str, _Entry], parents: _Parents) -> bool:
    """Whether the folder placeholder `entry` is still the one made and holds nothing
    but other listed placeholders: only then may it stay after its runs."""
    folder, name = os.path.split(entry.path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=parents.open(folder))
    except (OSError, LaunchError):
        return False
    try:
        info = os.fstat(fd)
        return (info.st_dev, info.st_ino) == (entry.device, entry.inode) and all(
            os.path.join(entry.path, inner) in entries for inner in os.listdir(fd))
    finally:
        os.close(fd)


def _holds_only(parent: int, name: str, content: bytes, size: int) -> bool:
    """Whether the file still holds just what the placeholder was made with."""
    if size != len(content):
        return False
    if not content:
        return True
    from ..host_walk import read_at

    return read_at(parent, name) == content
