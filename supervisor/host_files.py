"""Every file lnk-sandbox writes on the host goes through here, opened so that nothing a
sandbox wrote can redirect it.

A sandbox writes folders the person works in, and earlier runs, or another run alive
now, wrote others. A link planted anywhere on the way to a file the supervisor then
writes, as the person or as root, would turn that write onto a file of the link's
choosing (`~/.bashrc`, `/etc/ld.so.preload`), truncated, with content a sandbox partly
chose (the report names what it refused). Which folders some sandbox once wrote is not
known here, so no link is followed on the way to such a file but the system's own in
`/` itself (`/bin -> usr/bin`, macOS's `/tmp -> private/tmp`): no sandbox may write `/`.

- `open_report`: the report file the command line names. Each folder on the way is
  opened one component at a time from `/` (or the working directory) with O_NOFOLLOW |
  O_DIRECTORY, and a link refuses the launch, named (the person names the resolved path
  instead). The file is made or opened with O_NOFOLLOW | O_NONBLOCK and must be a regular
  file of the caller's with one name: not a pipe (which would block the start), not a
  hard link a sandbox made to a file of the person's.
- `PrivateFolder`: `$LNK_HOME` and everything lnk-sandbox keeps there (permissions, saved
  snapshots, the placeholder list, the runs, the check cache, the proxy's run folders).
  The trusted start is `$LNK_HOME` itself: the person's own setting, reached as the kernel
  resolves it (its path may pass the system's or the person's own links, and grants.py
  refuses a write grant holding it, so no sandbox writes a folder on that path), never a
  link itself, the caller's, written by no one else. Below it nothing is followed: each
  folder and file is opened through the folder above it with O_NOFOLLOW, made 0700 or
  0600 where missing, and a file is replaced whole through a temp file renamed in the
  same folder.

Facts: O_NOFOLLOW guards the last component only, hence one component per call; with
O_DIRECTORY a link gives ENOTDIR, without it ELOOP, so a refusal looks at the name to
say which; opening a FIFO for writing blocks until a reader comes, and O_NONBLOCK makes
that ENXIO; a file with more than one name (st_nlink) is reachable from elsewhere; macOS
has no O_PATH, so folders are opened O_RDONLY there (a folder one may search but not
list cannot be on the way to a report on a Mac).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import NoReturn

from .errors import LaunchError

_O_PATH: int = getattr(os, "O_PATH", 0)
_SEARCH = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LIST = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40  # Linux's own limit for one path


def _link_at(folder: int, name: str) -> str | None:
    """The text of the link `name` in `folder`, or None when it is not a link."""
    try:
        if not stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
            return None
        return os.readlink(name, dir_fd=folder)
    except OSError:
        return None


def _is_root(folder: int) -> bool:
    here, root = os.fstat(folder), os.stat("/")
    return (here.st_dev, here.st_ino) == (root.st_dev, root.st_ino)


def _own_file_problem(fd: int) -> str | None:
    """What makes an opened file one lnk-sandbox must not write, or None."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.geteuid():
        return f"it belongs to uid {info.st_uid}, not to this user ({os.geteuid()})"
    if info.st_nlink != 1:
        return (f"it has {info.st_nlink} names (a hard link), so writing it would change "
                "a file elsewhere too")
    return None


class _Refused(Exception):
    """A walk met what it must not pass: `why` names it, `err` is the errno."""

    def __init__(self, why: str, err: int | None) -> None:
        super().__init__(why)
        self.why = why
        self.err = err


def _start(path: str, flags: int) -> tuple[int, str, list[str]]:
    """Where a walk to `path` begins, trusted: the working directory for a relative path
    (the kernel's, no link in it); the home folder for one inside it, reached as the
    kernel resolves it (the person's system may put links on the way, and no sandbox may
    write a folder holding home: grants.py refuses it); else `/`. The fd, its path, and
    the components left to walk."""
    if not path.startswith("/"):
        return os.open(".", flags), os.getcwd().rstrip("/"), path.split("/")
    wanted = os.path.normpath(path)
    home = os.path.normpath(os.environ.get("HOME") or "/")
    if home != "/" and home.startswith("/") and (
            wanted == home or wanted.startswith(home + "/")):
        try:
            fd = os.open(home, (flags & ~os.O_NOFOLLOW) | os.O_DIRECTORY)
        except OSError:
            pass
        else:
            return fd, home, wanted[len(home):].split("/")
    return os.open("/", flags), "", wanted.split("/")


def _walk(path: str, flags: int) -> tuple[int, str]:
    """An fd of the folder `path`, and its path, each component from a trusted start
    (`_start`) opened on its own without following a link, but the system's own in `/`.
    _Refused naming the component otherwise."""
    fd, walked, parts = _start(path, flags)
    parts = [p for p in parts if p not in ("", ".")]
    links = 0
    try:
        while parts:
            part = parts.pop(0)
            try:
                next_fd = os.open(part, flags, dir_fd=fd)
            except OSError as err:
                link = _link_at(fd, part)
                if link is None:
                    raise _Refused(f"{walked}/{part} " + (
                        "is not a folder" if err.errno == errno.ENOTDIR else
                        f"cannot be opened: {err.strerror}"), err.errno) from None
                if not _is_root(fd):
                    raise _Refused(f"{walked}/{part} is a link (to {link})",
                                   errno.ELOOP) from None
                links += 1  # the system's own, in `/`: followed
                if links > _MAX_LINKS:
                    raise _Refused("too many links", errno.ELOOP) from None
                if link.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", flags)
                    walked = ""
                parts = [p for p in link.split("/") if p not in ("", ".")] + parts
                continue
            os.close(fd)
            fd = next_fd
            walked = os.path.dirname(walked) if part == ".." else f"{walked}/{part}"
    except BaseException:
        os.close(fd)
        raise
    return fd, walked or "/"


# -- the report ------------------------------------------------------------------------------

def open_report(path: str, *, what: str = "the report") -> int:
    """An fd to append the report (or `what` else the command line names) to, the file
    made (0600) or emptied first.

    LaunchError (125), naming the component, for a link anywhere in the path (but the
    system's own in `/`), a folder that is not one, and a file that is not a regular
    file of the caller's with one name.
    """

    def refuse(why: str, err: int | None = None) -> NoReturn:
        if err in (errno.EACCES, errno.EPERM, errno.EROFS):
            hint = "name a file in a folder you may write, such as /tmp/report.jsonl"
        elif err == errno.ENOENT:
            hint = "make the folder first, or name a file in a folder that exists"
        elif err == errno.EISDIR:
            hint = "name a file, as in --report /tmp/report.jsonl"
        else:
            hint = ("lnk-sandbox follows no link on the way to a file it writes (a sandbox "
                    "may have planted it): name the file by its real path "
                    f"({os.path.realpath(path)} now), outside the folders sandboxes write, "
                    "or remove what is there")
        raise LaunchError(f"cannot write {what} to {path}: {why}", hint=hint, errno=err)

    folder, name = os.path.split(path)
    if not name or name in (".", ".."):
        refuse("it names a folder", errno.EISDIR)
    try:
        fd, walked = _walk(folder or ".", _SEARCH)
    except _Refused as refused:
        refuse(refused.why, refused.err)
    shown = f"{walked.rstrip('/')}/{name}"
    try:
        report = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC | os.O_APPEND, 0o600, dir_fd=fd)
    except OSError as err:
        link = _link_at(fd, name)
        if link is not None:
            refuse(f"{shown} is a link (to {link})", errno.ELOOP)
        if err.errno == errno.ENXIO:
            refuse(f"{shown} is a pipe", err.errno)
        if err.errno == errno.EISDIR:
            refuse("it is a folder", err.errno)
        refuse(f"{shown}: {err.strerror}", err.errno)
    finally:
        os.close(fd)
    problem = _own_file_problem(report)
    if problem is not None:
        os.close(report)
        refuse(f"{shown}: {problem}")
    os.set_blocking(report, True)
    os.ftruncate(report, 0)
    return report


def open_log(path: str) -> int:
    """An fd to append to `path`, a log a test names in a variable: walked as a report
    is, the file the caller's, not emptied (several processes append to one log)."""
    folder, name = os.path.split(os.path.abspath(path))
    with PrivateFolder.anywhere(folder) as opened:
        return opened.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


# -- $LNK_HOME ---------------------------------------------------------------------------------

class PrivateFolder:
    """A folder of `$LNK_HOME` held open: every name in it is opened through it, no link
    followed. A context manager that closes it; `path` is for messages and for bwrap."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    def __enter__(self) -> PrivateFolder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @staticmethod
    def lnk_home(path: str, *, make: bool = True) -> PrivateFolder | None:
        """`$LNK_HOME` opened from a trusted start (the home folder, or `/`), no link
        followed on the way (but the system's own in `/`), and made (0700, with the
        folders above it) where missing when `make`; None when it is missing and not to
        be made. LaunchError for a link, a folder not this user's, or writable by
        others, and for a missing home folder: lnk-sandbox never makes one (a
        `HOME=/nonexistent` means none, and is kept so)."""
        parent, name = os.path.split(os.path.normpath(path))
        try:
            fd, walked = _walk(parent, _SEARCH)
        except _Refused as refused:
            if refused.err != errno.ENOENT:
                raise _unreachable(path, refused) from None
            if not make:
                return None
            home = os.path.normpath(os.environ.get("HOME") or _passwd_home())
            if (parent + "/").startswith(home.rstrip("/") + "/") and not os.path.isdir(home):
                raise LaunchError(
                    f"the home folder {home} ($HOME) does not exist, so lnk-sandbox's "
                    f"settings ($LNK_HOME = {path}) cannot be made", hint=_SETTINGS_HINT,
                    errno=errno.ENOENT) from None
            try:
                _make_folders(parent)
                fd, walked = _walk(parent, _SEARCH)
            except _Refused as again:
                raise _unreachable(path, again) from None
            except OSError as err:
                raise cannot_make(parent, err) from None
        with PrivateFolder(fd, walked) as above:
            if not name:
                return PrivateFolder(os.dup(above.fd), walked)
            return above.folder(name, make=make)

    @staticmethod
    def anywhere(path: str) -> PrivateFolder:
        """A folder the caller names (not in `$LNK_HOME`), walked as a report's is: no
        link followed but the system's own in `/`."""
        try:
            fd, walked = _walk(path, _SEARCH)
        except _Refused as refused:
            raise LaunchError(f"cannot write in {path}: {refused.why}",
                              errno=refused.err) from None
        return PrivateFolder(fd, walked)

    def _checked(self) -> PrivateFolder:
        """This folder, when no one else can change what is in it: the caller's, and
        writable by no one else, or sticky (others' files there then fail the owner
        check, and ours cannot be removed or replaced by them)."""
        info = os.fstat(self.fd)
        problem = None
        if info.st_uid != os.geteuid():
            problem = f"belongs to uid {info.st_uid}, not to this user ({os.geteuid()})"
        elif info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
        if problem is not None:
            self.close()
            raise LaunchError(f"{self.path} {problem}; lnk-sandbox keeps its settings "
                              "only where no one else can change them",
                              hint=f"chmod go-w {self.path}, or set LNK_HOME to a folder "
                              "of your own")
        return self

    def folder(self, name: str, *, make: bool = True) -> PrivateFolder | None:
        """The folder `name` (one or more components) below this one, each opened through
        the one above without following a link and made 0700 where missing when `make`;
        None when missing and not to be made."""
        fd = os.dup(self.fd)
        path = self.path
        try:
            for part in [p for p in name.split("/") if p]:
                if part == "..":
                    raise LaunchError(f"{name!r} leaves {self.path}")
                path = os.path.join(path, part)
                try:
                    next_fd = os.open(part, _LIST, dir_fd=fd)
                except FileNotFoundError:
                    if not make:
                        os.close(fd)
                        return None
                    try:
                        os.mkdir(part, 0o700, dir_fd=fd)
                    except FileExistsError:
                        pass
                    except OSError as err:  # EACCES, EROFS, ENOSPC; ENOENT in /proc
                        raise cannot_make(path, err) from None
                    next_fd = _open_below(fd, part, path)
                except OSError:
                    next_fd = _open_below(fd, part, path)
                os.close(fd)
                fd = next_fd
                if make:  # written to: no one else's (a read trusts what it finds less)
                    PrivateFolder(os.dup(fd), path)._checked().close()
        except BaseException:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
            raise
        return PrivateFolder(fd, path)

    def open(self, name: str, flags: int, mode: int = 0o600) -> int:
        """`name` in this folder opened with `flags` (O_NOFOLLOW and O_NONBLOCK added):
        LaunchError for a link there, or what is not a regular file (of this user's, with
        one name, when opened to write); FileNotFoundError as it is."""
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode,
                         dir_fd=self.fd)
        except FileNotFoundError:
            raise
        except OSError as err:
            path = os.path.join(self.path, name)
            link = _link_at(self.fd, name)
            if link is not None:
                raise LaunchError(f"{path} is a link (to {link}); lnk-sandbox follows none "
                                  "where it keeps its files", hint="remove the link",
                                  errno=errno.ELOOP) from None
            what = "is a pipe" if err.errno == errno.ENXIO else f"cannot be opened: " \
                f"{err.strerror}"
            raise LaunchError(f"{path} {what}", hint="remove it; lnk-sandbox makes it again",
                              errno=err.errno) from None
        writes = flags & (os.O_WRONLY | os.O_RDWR)
        problem = (_own_file_problem(fd) if writes else None
                   if stat.S_ISREG(os.fstat(fd).st_mode) else "it is not a regular file")
        if problem is not None:
            os.close(fd)
            raise LaunchError(f"{os.path.join(self.path, name)}: {problem}",
                              hint="remove it; lnk-sandbox makes it again")
        os.set_blocking(fd, True)
        return fd

    def read(self, name: str, limit: int = 1 << 22) -> bytes | None:
        """What `name` holds (up to `limit` bytes), None when it is missing."""
        try:
            fd = self.open(name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            chunks = []
            left = limit
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def is_file(self, name: str) -> bool:
        try:
            return stat.S_ISREG(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except OSError:
            return False

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def unlink(self, name: str) -> None:
        """Remove `name` if it is there."""
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def write_atomically(self, name: str, data: bytes, mode: int = 0o600, *,
                         sync: bool = True, temp: str | None = None) -> None:
        """Replace `name` with `data` whole, or leave it as it was (OSError): a temp file
        (`temp`, or NAME.PID.tmp), fsync'ed when `sync`, renamed over it in this folder.
        A temp file a writer killed mid-write left (its pid is in its name) goes first."""
        if temp is None:
            self.remove_stale_temps(name)
            temp = f"{name}.{os.getpid()}.tmp"
        self.unlink(temp)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, mode, dir_fd=self.fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            self.unlink(temp)
            raise
        os.close(fd)
        try:
            os.rename(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.unlink(temp)
            raise

    def make_unique_folder(self, prefix: str) -> str:
        """A new folder (0700) named `prefix` and a random tail; its name."""
        while True:
            name = f"{prefix}{os.urandom(4).hex()}"  # secrets.token_hex(4)
            try:
                os.mkdir(name, 0o700, dir_fd=self.fd)
                return name
            except FileExistsError:
                continue

    def remove_tree(self, name: str) -> None:
        """Remove the folder `name` and all in it, links removed, never followed."""
        if self._remove_flat(name):
            return
        import shutil  # with bz2 and lzma, 2 ms of a start: for folders holding folders

        try:
            shutil.rmtree(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def _remove_flat(self, name: str) -> bool:
        """Remove the folder `name` when it holds no folder (a run's own: a file or two),
        each entry unlinked through the folder's fd (a link removed, never followed);
        False, with what is left, for rmtree."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=self.fd)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        return False
                    os.unlink(entry.name, dir_fd=fd)
            os.rmdir(name, dir_fd=self.fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        return True

    def remove_stale_temps(self, name: str) -> None:
        try:
            entries = self.names()
        except OSError:
            return
        for entry in entries:
            middle = entry[len(name) + 1:-4] if entry.startswith(name + ".") and \
                entry.endswith(".tmp") else ""
            if not middle.isdigit() or int(middle) == os.getpid():
                continue
            try:
                os.kill(int(middle), 0)
                continue  # its writer is alive (or not ours to signal)
            except ProcessLookupError:
                pass
            except OSError:
                continue
            try:
                self.unlink(entry)
            except OSError:
                continue


def _passwd_home() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        return ""


def _make_folders(path: str) -> None:
    """`os.makedirs(path, 0o700, exist_ok=True)` without its recursion, a level per
    component, which a long path (thousands of components) takes past Python's limit."""
    missing = []
    while path not in ("/", "//", "") and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass


def _unreachable(path: str, refused: _Refused) -> LaunchError:
    return LaunchError(f"lnk-sandbox's settings ($LNK_HOME = {path}) cannot be reached: "
                       f"{refused.why}; no link is followed on the way to them, since a "
                       "sandbox may have planted it",
                       hint="set LNK_HOME to the folder's real path, or remove the link",
                       errno=refused.err)


def _open_below(folder: int, name: str, path: str) -> int:
    try:
        return os.open(name, _LIST, dir_fd=folder)
    except OSError as err:
        link = _link_at(folder, name)
        if link is not None:
            raise LaunchError(f"{path} is a link (to {link}); lnk-sandbox follows none "
                              "where it keeps its files", hint="remove the link",
                              errno=errno.ELOOP) from None
        raise LaunchError(f"cannot open {path}: {err.strerror}", hint=_SETTINGS_HINT,
                          errno=err.errno) from None


_SETTINGS_HINT = ("lnk-sandbox keeps its settings in $LNK_HOME (by default ~/.lnk): set "
                  "LNK_HOME to the absolute path of a folder of your own, on a file system "
                  "you may write, as in LNK_HOME=$HOME/.lnk")


def cannot_make(path: str, err: OSError) -> LaunchError:
    """A folder of lnk-sandbox's own that the file system refused to make, said with its
    cause and where else the settings can go."""
    why = {errno.EROFS: "the file system there is read-only",
           errno.EACCES: "this user may not write there",
           errno.EPERM: "this user may not write there",
           errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
           errno.ENOENT: "the folder above it is gone, or its file system (as /proc's) "
                         "makes none"}.get(
               err.errno or 0, err.strerror or "")
    return LaunchError(f"cannot make {path}: {why}", hint=_SETTINGS_HINT, errno=err.errno)
