"""Opening a user's file for reading: only a regular file, and never waiting on it.

`open()` on a FIFO nobody writes to blocks forever, a character device such as /dev/zero never
ends, and a directory fails late; each reader (scenes, recordings) opens through `open_regular`,
which opens without blocking (O_NONBLOCK: a FIFO opens at once) and refuses anything but a
regular file before reading a byte; `read_regular` reads such a file whole within a byte budget,
refusing it (FileTooLarge) before it allocates past the budget.

Writing is atomic: a writer writes a hidden temporary beside its target (`temporary_path`) and
renames it over the target (os.replace), and removes what earlier writers killed on the way left
(`remove_stale_temporaries`).
"""
import os
import secrets
import stat
from pathlib import Path


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket or a directory: `strerror` says which."""


def kind_of(mode):
    """What a file of this st_mode is, in words."""
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


def open_regular(path, buffering=-1):
    """A binary file object reading `path`; OSError if it cannot be opened (NotRegularFile, with
    strerror "is a FIFO (named pipe); expected a regular file" and the like, for a special file);
    ValueError for a NUL in the name."""
    # The descriptor goes to the file object inside `open` (the opener runs there), so nothing of
    # ours holds it beside the object: a signal's exception between a bare os.open and our own
    # wrapping left two closers of one number, the second closing whatever file reused it.
    flags = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        stream = open(path, "rb", buffering=buffering, opener=lambda name, mode: os.open(name, mode | flags))
    except IsADirectoryError:       # (open refuses a directory itself)
        raise NotRegularFile(0, "is a directory; expected a regular file", str(path)) from None
    try:
        mode = os.fstat(stream.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, f"is {kind_of(mode)}; expected a regular file", str(path))
    except BaseException:
        stream.close()
        raise
    return stream


CHUNK = 2**20      # bytes read at a time by `read_regular`


class FileTooLarge(OSError):
    """A file with more bytes than its reader's budget: `strerror` says the budget."""


def read_regular(path, limit):
    """The bytes of the regular file `path`, at most `limit` of them: OSError as `open_regular`
    raises it, FileTooLarge past the limit (read up to limit + 1 bytes, never more)."""
    with open_regular(path) as stream:
        if os.fstat(stream.fileno()).st_size > limit:      # the usual case, known before a byte is read
            raise FileTooLarge(0, f"has more than {limit} bytes, the most this reader takes", str(path))
        chunks, total = [], 0
        while total <= limit:       # in chunks: read(limit + 1) would allocate the whole budget at once
            chunk = stream.read(min(CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    if total > limit:               # a file that grew while read
        raise FileTooLarge(0, f"has more than {limit} bytes, the most this reader takes", str(path))
    return b"".join(chunks)


def temporary_path(path):
    """A fresh hidden name beside `path` for an atomic write: `.NAME.PID.RANDOM.tmp` in its
    directory (the writer's process id: `remove_stale_temporaries` knows whose it was)."""
    path = Path(path)
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"


def identity(path):
    """What tells one file at `path` from another written there later: (device, inode, mtime in
    ns), or None when nothing is there (a writer that must take back its output compares them)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino, found.st_mtime_ns


def remove_stale_temporaries(path):
    """Remove the temporary files of earlier writes of `path` whose writer is gone (a run killed by
    SIGKILL cannot remove its own): `.NAME.PID.RANDOM.tmp` with no process PID. A live PID's file
    is left alone (its write may be under way, or the number was reused: then it stays, harmless)."""
    path = Path(path)
    prefix = f".{path.name}."
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")) or not entry.is_file(follow_symlinks=False):
            continue
        pid = name[len(prefix):-len(".tmp")].split(".")[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            Path(entry.path).unlink(missing_ok=True)
        except (PermissionError, OverflowError, OSError):
            pass


def write_atomically(path, write, binary=True):
    """Write `path` through `write(stream)` on a fresh temporary beside it (`temporary_path`), then
    rename it over `path` (os.replace): a reader sees the old file or the whole new one. The
    temporary is removed on any exception, an interruption (KeyboardInterrupt, a signal's exception)
    included: its name is chosen before it exists, so no moment leaves it behind; the leftovers of
    writers killed outright go first (`remove_stale_temporaries`)."""
    path = Path(path)
    remove_stale_temporaries(path)
    temp = temporary_path(path)
    opened = False
    try:
        with (open(temp, "xb") if binary else open(temp, "x", newline="")) as out:
            opened = True
            write(out)
        os.replace(temp, path)
    except BaseException as error:
        if opened or not isinstance(error, FileExistsError):    # else the random name was taken: not ours
            temp.unlink(missing_ok=True)
        raise
