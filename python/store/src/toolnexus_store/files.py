"""The file operations the store's files share, in one directory: checked reads of regular
files, temp files written and renamed into place, directory flushes and listings, and the
errors they raise.

Inside the component the directory is the one the host preopens at `/`, reached through
CPython's `os` module over WASI; under the unit tests it is any directory of the host. Names are
paths relative to it (`t1.json`, `.push/t1/c1.json`); messages show them from `/`, as the Rust
and JavaScript stores do, so a message never reveals where the host keeps the directory.
"""

import os
import stat as stat_module
import time

from .format import TEMP_PREFIX, StoreError, Stamp, decode_utf8

#: Open flags that never follow a symbolic link (WASI and POSIX alike).
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_CHUNK = 64 * 1024


def io_error(op, name, e):
    """An `io` error naming the file; the `errno` of `e` (an `OSError`) is kept."""
    code = getattr(e, "errno", None)
    why = e.strerror if getattr(e, "strerror", None) else str(e)
    return StoreError("io", "cannot %s /%s: %s" % (op, name, why), errno=code)


def stamp_of(st):
    """The stamp (size, modification time in ns) of an `os.stat_result`. Inside a component
    the time is what the host's `descriptor-stat` says, exactly what Rust's
    `Metadata::modified()` gives there and natively."""
    return Stamp(st.st_size, st.st_mtime_ns)


def not_regular(mode):
    if stat_module.S_ISLNK(mode):
        return "is a symbolic link, which is never followed"
    if stat_module.S_ISDIR(mode):
        return "is a directory"
    return "is not a regular file (a FIFO, a socket or a device)"


def wall_now_ms():
    """Milliseconds on the wall clock, to age files by their modification time."""
    return time.time_ns() / 1e6


def monotonic_ns():
    return time.monotonic_ns()


def sleep_ns(ns):
    """Waits `ns` nanoseconds (inside a component the host cuts a wait at the call's deadline)."""
    time.sleep(ns / 1e9)


def random_hex():
    """32 lower-case hex digits from the system's randomness (`wasi:random` in a component)."""
    return os.urandom(16).hex()


def in_dir(directory, name):
    """`name` in the directory `directory` (`""`: the root)."""
    return name if directory == "" else "%s/%s" % (directory, name)


def write_all(fd, data, name, offset=0):
    """Writes all of `data` at `offset` of the open file `fd`."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise StoreError("io", "cannot write /%s: short write" % name)
        view = view[written:]
        offset += written


def read_all(fd, limit):
    """Reads at most `limit` bytes (or to the end) of an open file, from its start."""
    chunks = []
    total = 0
    while total < limit:
        chunk = os.pread(fd, min(_READ_CHUNK, limit - total), total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def sync_data(fd):
    """Flushes a file's data (and what is needed to read it back)."""
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:
        os.fsync(fd)


class Dir:
    """The store's directory: every path the store touches goes through here."""

    def __init__(self, root):
        self.root = root

    def path(self, name):
        return os.path.join(self.root, name)

    def lstat(self, name):
        """The `os.stat_result` of `name`, not followed; `OSError` as raised."""
        return os.stat(self.path(name), follow_symlinks=False)

    def open(self, name, flags):
        """A descriptor for `name`, never through a link at its last component."""
        return os.open(self.path(name), flags | NO_FOLLOW, 0o666)

    def read_capped(self, name, limit, corrupt, too_large):
        """The regular file `name` as text: `(text, stat)` (the stat of the file read), `None` if
        it does not exist. `corrupt(name, reason)` is raised if it is not a regular file (looked
        at before opening it, so a link is never followed and a FIFO never blocks), is larger
        than `limit` bytes (`too_large(size)` says so) or is not UTF-8."""
        try:
            mode = self.lstat(name).st_mode
        except FileNotFoundError:
            return None
        except OSError as e:
            raise io_error("read", name, e)
        if not stat_module.S_ISREG(mode):
            raise corrupt(name, not_regular(mode))
        try:
            fd = self.open(name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise io_error("read", name, e)
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode):
                raise corrupt(name, not_regular(st.st_mode))
            if st.st_size > limit:
                raise corrupt(name, too_large(st.st_size))
            # At most one byte past the cap, in case the file grew since it was looked at.
            data = read_all(fd, limit + 1)
        except OSError as e:
            raise io_error("read", name, e)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise corrupt(name, too_large(len(data)))
        text = decode_utf8(data)
        if text is None:
            raise corrupt(name, "not UTF-8")
        return text, st

    def read_small(self, name, limit):
        """The first `limit` bytes of the regular file `name` as text; `None` if it is missing,
        unreadable, not a regular file or not UTF-8. Never an error: side files only ever
        count as absent."""
        try:
            if not stat_module.S_ISREG(self.lstat(name).st_mode):
                return None
            fd = self.open(name, os.O_RDONLY)
        except OSError:
            return None
        try:
            return decode_utf8(read_all(fd, limit))
        except OSError:
            return None
        finally:
            os.close(fd)

    def sync_dir(self, directory=""):
        """Flushes the directory (default: the root), so a rename or unlink in it survives
        power loss."""
        try:
            fd = os.open(self.path(directory or "."), os.O_RDONLY | os.O_DIRECTORY)
        except OSError as e:
            raise io_error("sync directory", directory, e)
        try:
            os.fsync(fd)
        except OSError as e:
            raise io_error("sync directory", directory, e)
        finally:
            os.close(fd)

    def create_exclusive(self, name, flags=os.O_WRONLY):
        """Creates `name` exclusively (`O_CREAT | O_EXCL`): its descriptor; `OSError` as raised."""
        return self.open(name, flags | os.O_CREAT | os.O_EXCL)

    def _create_temp(self, directory):
        """A new temp file in `directory`, created exclusively under a random hidden name."""
        last = None
        for _ in range(16):
            name = in_dir(directory, TEMP_PREFIX + random_hex())
            try:
                return name, self.create_exclusive(name)
            except FileExistsError as e:
                last = io_error("create temp file", name, e)
            except OSError as e:
                raise io_error("create temp file", name, e)
        raise last

    def write_temp(self, data, durable, directory=""):
        """Writes `data` to a fresh temp file in `directory`, flushed under full durability:
        `(name, stamp)`. On failure the temp file is removed. An error creating it keeps its
        `errno` (a directory removed meanwhile shows as `ENOENT`)."""
        name, fd = self._create_temp(directory)
        try:
            write_all(fd, data, name)
            if durable:
                sync_data(fd)
            stamp = stamp_of(os.fstat(fd))
        except BaseException as e:
            os.close(fd)
            self.remove_quietly(name)
            if isinstance(e, OSError):
                raise io_error("write", name, e)
            raise
        os.close(fd)
        return name, stamp

    def rename_into(self, source, target):
        try:
            os.rename(self.path(source), self.path(target))
        except OSError as e:
            raise io_error("rename into", target, e)

    def rename_quietly(self, source, target):
        """Renames `source` to `target`: whether it happened."""
        try:
            os.rename(self.path(source), self.path(target))
            return True
        except OSError:
            return False

    def remove_quietly(self, name):
        """Best effort: a temp file left behind is hidden and swept later."""
        try:
            os.unlink(self.path(name))
        except OSError:
            pass

    def unlink(self, name):
        """Removes the file `name`: whether it existed."""
        try:
            os.unlink(self.path(name))
            return True
        except FileNotFoundError:
            return False
        except OSError as e:
            raise io_error("delete", name, e)

    def remove_dir(self, name):
        """Removes the empty directory `name`; `OSError` as raised."""
        os.rmdir(self.path(name))

    def make_dir(self, name):
        """Makes the directory `name` if it is missing: whether it was made here."""
        try:
            os.mkdir(self.path(name))
            return True
        except FileExistsError:
            return False
        except OSError as e:
            raise io_error("create directory", name, e)

    def entries(self, directory=""):
        """Every entry of `directory` (default: the root) as `(name, is_directory)`, the type
        as the listing says it, never following a link; `None` if it does not exist."""
        try:
            with os.scandir(self.path(directory or ".")) as it:
                return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]
        except FileNotFoundError:
            return None
        except OSError as e:
            raise io_error("list", directory, e)

    def modified_ms(self, name):
        """When `name` (not followed) was last changed, in wall-clock ms; `None` if unknown."""
        try:
            mtime_ns = self.lstat(name).st_mtime_ns
        except OSError:
            return None
        return mtime_ns / 1e6 if mtime_ns else None

    def remove_if_stale_temp(self, name, now_ms, older_than_ms):
        """Removes `name` if it is a temp file (`.tmp-…`) last changed at least `older_than_ms`
        before `now_ms`: a leftover of a writer that crashed before its rename (a younger one
        may belong to a live writer). Errors are ignored: gone already, or not ours."""
        if not name.rsplit("/", 1)[-1].startswith(TEMP_PREFIX):
            return
        modified = self.modified_ms(name)
        if modified is not None and now_ms - modified >= older_than_ms:
            self.remove_quietly(name)
