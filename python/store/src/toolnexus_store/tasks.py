"""A directory of Task files: atomic writes, versions, per-Task locks, verified reads, crash
clean-up. The Python twin of `shared/format/src/dir/` (and of `js/store/src/dir.js`), writing
exactly its files (docs/on-disk-format.md):

- `<stem>.json`: the Task, only ever replaced by renaming a complete, flushed file over it;
- `.~<stem>.v`: its version record, padded to 256 bytes, naming the size and modification time
  of the Task file it describes and of the one that file replaced; created by a rename or
  exclusively, then overwritten in place by later saves, always before their Task file;
- `.~<stem>.l`: the lock a writer holds for its save, created exclusively; the writer writes
  its Task text into it and renames it over `<stem>.json`, which releases it. Broken by a
  waiting writer once it has seen it unchanged for longer than the lease by its own monotonic
  clock (never by its modification time against the wall clock, which a clock stepped back or
  forward makes wrong by the size of the step);
- `.tmp-<32 hex>`: temp files (version records replaced by a rename), and locks moved aside
  while being broken;
- `.push/`: the Tasks' push-notification configs (`push.py`), removed with their Task.

The lease guards a lock (a host that fences its components' locks also refuses to move one a
live writer holds), so every late act of a writer that may have outlived its lease is checked
for: ownership after a renewal, before the record, before the rename and before a delete's
unlink, and after the rename that the Task file is the file this save wrote
(docs/on-disk-format.md, "The lease").

Every Task lives in the directory, never in memory: the host runs several instances of the
component at once, and other processes (in any of the stores' languages) may share the
directory.
"""

import json
import os
import stat as stat_module

from . import push
from .files import (
    Dir,
    io_error,
    monotonic_ns,
    random_hex,
    sleep_ns,
    stamp_of,
    sync_data,
    wall_now_ms,
    write_all,
)
from .format import (
    DEFAULT_LOCK_LEASE_MS,
    MAX_RECORD_BYTES,
    MAX_TASK_FILE_BYTES,
    RECORD_LEN,
    STALE_TEMP_AGE_MS,
    TEMP_PREFIX,
    U64_MAX,
    StoreError,
    encode_id,
    is_task_file_name,
    parse_record,
    parse_task,
    record_text,
    side_names,
    timestamp_of,
    version_of,
    SortKey,
)

MS = 1_000_000
#: Lock waits: the first pause and the longest, in nanoseconds (0.2 ms doubling to 20 ms).
FIRST_PAUSE_NS = 200_000
MAX_PAUSE_NS = 20 * MS

#: What reading a version record found when it does not parse or fails its check: torn by a
#: save writing it in place at this very moment, or left unreadable by a crash. A reader counts
#: it as none (version 1); a save, which holds the lock, refuses it as corrupt if the Task file
#: exists (`RECORD_TORN`).
UNSETTLED = "unsettled"


#: Why a save refuses a Task whose version record does not read whole under the lock.
RECORD_TORN = (
    "the version record does not read whole, so the Task's version is unknown; remove it to "
    "count versions from 1 again"
)


def corrupt(name, reason):
    return StoreError("corrupt", "corrupt task file /%s: %s" % (name, reason))


def too_large(size):
    return "is %d bytes, over the largest Task file read (%d bytes)" % (size, MAX_TASK_FILE_BYTES)


def settled(record):
    """A record as `version_of` takes it: an unsettled one counts as none (version 1)."""
    return None if record is UNSETTLED else record


def format_ms(ms):
    return "%ds" % (ms // 1000) if ms % 1000 == 0 else "%dms" % ms


def _record_in(fd):
    """What the open file `fd` holds, read as a version record (`UNSETTLED` if not one)."""
    try:
        data = os.pread(fd, MAX_RECORD_BYTES, 0)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return UNSETTLED
    record = parse_record(text)
    return UNSETTLED if record is None else record


class Lock:
    """A lock a writer holds: its name, its open file, its identity (device and inode, while
    the file is held open no other file can take them) and when it was taken."""

    def __init__(self, name, fd, identity, acquired):
        self.name = name
        self.fd = fd
        self.identity = identity
        self.acquired = acquired
        self.renamed = False


class TaskDir:
    """The Task files of one directory. `durable`: flush files and the directory (full
    durability). `lease_ms`: the lock lease; every writer of one directory must use the same."""

    def __init__(self, directory, durable=True, lease_ms=DEFAULT_LOCK_LEASE_MS):
        self.dir = directory
        self.durable = durable
        self.lease_ms = lease_ms

    def sweep(self):
        """Removes temp files left by writers that crashed before their rename (those last
        changed more than an hour ago: younger ones may belong to a live writer). Locks are
        left alone: one look cannot tell a crashed writer's lock from a live one's (a lock is
        broken only by a writer that watched it unchanged for a lease), and a lock is never
        read as a Task; the next save of its Task breaks it. Errors are ignored: this is
        housekeeping, never a reason to fail a call."""
        try:
            now = wall_now_ms()
            for name, _ in self.dir.entries() or []:
                self.dir.remove_if_stale_temp(name, now, STALE_TEMP_AGE_MS)
            push.sweep_temps(self.dir, now)
        except StoreError:
            pass  # An unreadable directory shows up as an error of the call itself.

    # --- Reading ---

    def read_record(self, name):
        """The version record `name`: a `Record`, `None` (no record, or not a regular file), or
        `UNSETTLED`."""
        try:
            if not stat_module.S_ISREG(self.dir.lstat(name).st_mode):
                return None
            fd = self.dir.open(name, os.O_RDONLY)
        except OSError:
            return None
        try:
            return _record_in(fd)
        finally:
            os.close(fd)

    def read_task_file(self, name):
        """A Task file: `(text, stamp)`, `None` if it does not exist; `corrupt` if it is not a
        regular file, is over `MAX_TASK_FILE_BYTES` or is not UTF-8."""
        found = self.dir.read_capped(name, MAX_TASK_FILE_BYTES, corrupt, too_large)
        if found is None:
            return None
        text, st = found
        return text, stamp_of(st)

    def get(self, task_id, checked=True):
        """The Task with this id and its version: `(text, version)`, or `None`. Lock-free: the
        version record is read before the Task file, and writers rename the Task file before
        the record, so the version is never newer than the text. Unless the host checks what
        it is given (`checked=False`), a file holding anything but this Task is corrupt."""
        name = encode_id(task_id)
        record_name, _ = side_names(name)
        record = self.read_record(record_name)
        # A record that does not read whole is, almost always, being written in place by a
        # save right now: read it again. One that stays unsettled counts as none (version 1,
        # never newer than the text), and reads never wait for a lock.
        for _ in range(3):
            if record is not UNSETTLED:
                break
            record = self.read_record(record_name)
        record = settled(record)
        found = self.read_task_file(name)
        if found is None:
            return None
        text, stamp = found
        if checked:
            try:
                _, stored_id = parse_task(text)
            except ValueError as e:
                raise corrupt(name, str(e))
            if stored_id != task_id:
                raise corrupt(name, "holds task %s, not %s" % (_quoted(stored_id), _quoted(task_id)))
        return text, version_of(record, stamp)

    # --- Saving ---

    def save(self, text, condition, task_id=None):
        """Saves Task text (checked first unless the host passes its checked `task_id`, then
        written exactly as given) if `condition` holds (`("any",)`, `("absent",)` or
        `("version", n)`), as one atomic step against every writer following the protocol.
        Returns the new version."""
        if task_id is None:
            try:
                _, task_id = parse_task(text)
            except ValueError as e:
                raise StoreError("invalid-input", str(e))
        data = text.encode("utf-8")
        holds, expected = _expectation(condition)
        name = encode_id(task_id)
        record_name, lock_name = side_names(name)
        lock = None
        in_place = None
        temp = None
        try:
            # The lock is the Task's temp file: taken, the version checked, the text written
            # into it, the record written, then renamed over the Task file (which releases it).
            lock = self.lock(lock_name)
            record, in_place = self._open_record_for_save(record_name)
            try:
                st = self.dir.lstat(name)
                # No rename could replace a directory: refused before anything is written.
                if stat_module.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(21, "Is a directory")
                found = stamp_of(st)
            except FileNotFoundError:
                found = None
            except OSError as e:
                raise io_error("replace", name, e)
            # Under the lock no one writes the record, so one that does not read whole was torn
            # by a crash or a disk fault: the Task's version is unknown, and counting from 1
            # again would let an old conditional save win. Nothing is written until someone
            # looks. (Lock-free reads count it as none: there it is most likely a save writing
            # it in place at that very moment.)
            if record is UNSETTLED and found is not None:
                raise corrupt(record_name, RECORD_TORN)
            current = None if found is None else version_of(record, found)
            if not holds(current):
                what = "no task" if current is None else "version %d" % current
                raise StoreError(
                    "conflict",
                    "/%s changed: expected %s, found %s" % (name, expected, what),
                    current=current,
                )
            version = 1 if current is None else min(current + 1, U64_MAX)
            stamp = self._write_lock(lock, data, found)
            record_bytes = record_text(version, stamp, found).encode("ascii")
            self.check_young(lock)
            # The record first, in place when these stores wrote it (one short write, no new
            # file); a missing or foreign one is replaced by a rename. A reader between this
            # and the rename below sees the record and the file it replaces: one version less.
            # A brand-new Task's record is created in place too: if a power loss keeps the Task
            # file and not the record's text, it reads as version 1, which it is. A record
            # written in place is flushed after the rename, with the directory: the
            # acknowledgement waits for both, and the lock is not held for them.
            if in_place is None and record is None and found is None:
                try:
                    in_place = self.dir.create_exclusive(record_name)
                except OSError:
                    in_place = None  # something is there after all: replaced by a rename
            if in_place is not None:
                try:
                    write_all(in_place, record_bytes, record_name)
                except OSError as e:
                    raise io_error("write", record_name, e)
            else:
                temp, _ = self.dir.write_temp(record_bytes, self.durable)
                self.dir.rename_into(temp, record_name)
                temp = None
            self.check_held(lock)
            self.rename_over(lock, name)
            if self.durable:
                # The new Task file is in place: a flush that fails now leaves a save that may
                # or may not survive a power loss, which only a re-read can tell.
                try:
                    if in_place is not None:
                        sync_data(in_place)
                    self.dir.sync_dir()
                except (OSError, StoreError) as e:
                    raise StoreError(
                        "outcome-unknown",
                        "cannot flush %s after the save's rename (%s): the save may or may not "
                        "survive a power loss; read the Task again before saving again"
                        % (record_name if in_place is not None else "the directory", e),
                    )
            return version
        finally:
            if in_place is not None:
                os.close(in_place)
            if lock is not None:
                self.unlock(lock)
            if temp is not None:
                self.dir.remove_quietly(temp)

    def _open_record_for_save(self, name):
        """The version record `name` as a saver holding the lock reads it, opened once:
        `(record, fd)`, where `fd` is set when the save may overwrite the record in place (a
        regular file of exactly `RECORD_LEN` bytes, one these stores wrote; never through a
        link). Without `fd` the save replaces the record by a rename."""
        try:
            if not stat_module.S_ISREG(self.dir.lstat(name).st_mode):
                return None, None
            fd = self.dir.open(name, os.O_RDWR)
        except OSError:
            # Missing, or not writable here: read it as any reader would.
            return self.read_record(name), None
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode):
                os.close(fd)
                return None, None
            record = _record_in(fd)
            if st.st_size != RECORD_LEN:
                os.close(fd)
                return record, None
            return record, fd
        except OSError:
            os.close(fd)
            return self.read_record(name), None

    def _write_lock(self, lock, data, found):
        """Writes the Task text into the lock file, flushed under full durability: the stamp it
        will have as the Task file, made to differ from `found` (the file it replaces)."""
        try:
            write_all(lock.fd, data, lock.name)
            first = data[:1]

            def stamp_now():
                if found is None:
                    return stamp_of(os.fstat(lock.fd))
                return self._stamp_apart(lock, found, first)

            stamp = stamp_now()
            if self.durable:
                sync_data(lock.fd)
            # Waiters break a lock they saw unchanged for a lease, and the flush did not change
            # it: after a slow flush the lock is renewed (its first byte written again, which
            # moves its time to now), so a loaded disk alone does not make the save give up. A
            # flush that outlasted the whole lease may have had the lock broken and taken
            # meanwhile: the lock is renewed first and then looked at, and if it is no longer
            # ours the save gives up here, before it writes the record another writer's save
            # relies on. The new time is not flushed: a power loss before the file system
            # writes it back leaves the old one, and the Task then reads one version past the
            # record, never older than it is.
            if (monotonic_ns() - lock.acquired) * 4 > self.lease_ms * MS:
                renewed = monotonic_ns()
                write_all(lock.fd, first, lock.name)
                stamp = stamp_now()
                if not self._is_ours(lock):
                    raise self._lock_lost(lock)
                lock.acquired = renewed
            return stamp
        except OSError as e:
            raise io_error("write", lock.name, e)

    def _stamp_apart(self, lock, old, first):
        """The stamp of the lock file, made to differ from `old` (the Task file a save
        replaces) if it does not: its first byte written again after a pause that lets the file
        system's clock tick (1 ms, doubling), which moves its modification time to now. Readers
        tell the two files apart by their stamps alone."""
        stamp = stamp_of(os.fstat(lock.fd))
        pause = MS
        while stamp == old:
            if pause > 2000 * MS:
                raise StoreError(
                    "io",
                    "the file system keeps no modification time that tells this save from the "
                    "last one",
                )
            sleep_ns(pause)
            pause *= 2
            write_all(lock.fd, first, lock.name)
            stamp = stamp_of(os.fstat(lock.fd))
        return stamp

    # --- Listing and deleting ---

    def list(self, query):
        """One page of the Tasks matching `query` (a `format.Query`): `(texts, next_token,
        total)`, newest status timestamp first. Reads every Task file but keeps only the texts
        of the page's current candidates (at most page size + 1)."""
        page = query.collector()
        for name, _ in self.dir.entries() or []:
            if not is_task_file_name(name):
                continue
            found = self.read_task_file(name)
            if found is None:
                continue  # deleted meanwhile
            text = found[0]
            try:
                task, task_id = parse_task(text)
            except ValueError as e:
                raise corrupt(name, str(e))
            if encode_id(task_id) != name:
                raise corrupt(
                    name, "holds task %s, which belongs in another file" % _quoted(task_id)
                )
            timestamp = timestamp_of(task)
            if query.matches(task, timestamp):
                page.offer(SortKey(timestamp, task_id), text)
        return page.finish()

    def delete(self, task_id):
        """Removes the Task with this id (under its lock): whether there was one. Its push
        configs go after it (the lock released), whether or not the Task file existed: a crash
        in between leaves configs of no Task, which the next delete of that id removes."""
        name = encode_id(task_id)
        record_name, lock_name = side_names(name)
        lock = self.lock(lock_name)
        try:
            # The last check before the Task file goes: a lock broken (and perhaps taken by a
            # save) meanwhile is not ours to delete under.
            self.check_held(lock)
            existed = self.dir.unlink(name)
            # The record goes after the Task file: a crash in between leaves a record without
            # a Task, which reads as no Task.
            self.dir.remove_quietly(record_name)
            if existed and self.durable:
                self.dir.sync_dir()
        finally:
            self.unlock(lock)
        push.delete_all(self.dir, task_id, self.durable)
        return existed

    # --- Locks ---

    def lock(self, name):
        """Takes the lock `name`: a file created exclusively and kept open (a save writes its
        Task text into it). Waits (backing off from 0.2 ms up to 20 ms) while another writer
        holds it, at most three leases.

        A lock is broken only when this waiter has seen it unchanged (`_look`: the same file,
        length and modification time) for longer than the lease, by its own monotonic clock: a
        live writer renews its lock, which changes it. Never by the file's modification time
        against the wall clock, which a clock stepped back (a crashed writer's lock blocking its
        Task for as long as the step) or forward (every live lock broken) makes wrong."""
        started = monotonic_ns()
        lease_ns = self.lease_ms * MS
        pause = FIRST_PAUSE_NS
        # The lock another writer holds as this waiter first saw it unchanged, and since when.
        watched = None
        while True:
            try:
                fd = self.dir.create_exclusive(name)
            except FileExistsError:
                fd = None
            except OSError as e:
                raise io_error("create lock", name, e)
            if fd is not None:
                try:
                    st = os.fstat(fd)
                    identity = (st.st_dev, st.st_ino)
                except OSError:
                    identity = None
                return Lock(name, fd, identity, monotonic_ns())
            try:
                seen = self._look(name)
            except FileNotFoundError:
                continue  # released meanwhile: create it now
            except OSError:
                seen = None
            if seen is None:
                watched = None
            elif watched is not None and watched[0] == seen:
                if monotonic_ns() - watched[1] > lease_ns:
                    self.break_lock(name)
                    watched = None
                    continue
            else:
                watched = (seen, monotonic_ns())
            if monotonic_ns() - started > 3 * lease_ns:
                raise StoreError(
                    "io",
                    "cannot lock /%s: another writer kept the task locked for over %s"
                    % (name, format_ms(3 * self.lease_ms)),
                )
            sleep_ns(pause)
            pause = min(pause * 2, MAX_PAUSE_NS)

    def _look(self, name):
        """What is at the lock name `name` (not followed), as a waiter compares it from one look
        to the next: its identity (device and inode), length and modification time. A live
        writer renewing its lock, or a new lock in its place, changes it. `OSError` as raised
        (`FileNotFoundError`: released)."""
        st = self.dir.lstat(name)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def break_lock(self, name):
        """Breaks a lock seen unchanged for longer than the lease: moves it aside (one breaker
        wins the rename; a host that fences its components' locks refuses to move one a live
        writer holds, and then nothing is done) and removes what it moved, whatever it turns
        out to be. If a newer lock replaced the stale one between the look and the rename, its
        writer finds its lock gone at its next check and gives up, having changed nothing. A
        lock is never put back: that could replace a lock taken meanwhile, and then two writers
        would both win one version."""
        aside = TEMP_PREFIX + random_hex()
        if self.dir.rename_quietly(name, aside):
            # If this fails it stays aside, and the sweep removes it in an hour.
            self.dir.remove_quietly(aside)

    def check_young(self, lock):
        """Fails unless `lock` was taken less than half the lease ago (no one may have broken
        it)."""
        if (monotonic_ns() - lock.acquired) * 2 >= self.lease_ms * MS:
            raise self._lock_lost(lock)

    def check_held(self, lock):
        """Fails unless `lock` is still ours and young enough that no one may break it before
        the rename that follows: the last check before a save changes the Task file."""
        self.check_young(lock)
        if not self._is_ours(lock):
            raise self._lock_lost(lock)

    def rename_over(self, lock, target):
        """Renames the lock (holding the Task text) over `target`: the save's one change of the
        Task file, which releases the lock. A rename that returns half a lease or more after the
        lock was taken or renewed may have come after another writer broke and took the lock
        (this store cannot see the host's kernel locks): unless the Task file is then this save's
        own file, the save's outcome is unknown, and the writer that stalled is never told it
        won."""
        self.dir.rename_into(lock.name, target)
        lock.renamed = True
        late = monotonic_ns() - lock.acquired
        if late * 2 < self.lease_ms * MS:
            return
        try:
            there = self.dir.lstat(target)
            ours = lock.identity is not None and (there.st_dev, there.st_ino) == lock.identity
        except OSError:
            ours = False
        if not ours:
            raise StoreError(
                "outcome-unknown",
                "the save's rename over /%s came %s after it took or renewed its lock, past half "
                "the lock's lease, and the Task file is not the file it wrote: another writer "
                "may have taken the lock meanwhile, so whether this save took effect is unknown; "
                "read the Task again before saving again" % (target, format_ms(late // MS)),
            )

    def unlock(self, lock):
        """Releases a lock a save did not rename over its Task file: removed if still ours."""
        if not lock.renamed and self._is_ours(lock):
            self.dir.remove_quietly(lock.name)
        os.close(lock.fd)

    def _is_ours(self, lock):
        """Whether the file at `lock.name` is still the one this writer created: by identity, or
        where that cannot be told, by its stamp."""
        try:
            there = self.dir.lstat(lock.name)
            if lock.identity is not None:
                return (there.st_dev, there.st_ino) == lock.identity
            return stamp_of(there) == stamp_of(os.fstat(lock.fd))
        except OSError:
            return False

    def _lock_lost(self, lock):
        return StoreError(
            "io",
            "cannot save under lock /%s: the lock was held past half its lease (%s) or taken "
            "over; nothing was saved" % (lock.name, format_ms(self.lease_ms // 2)),
        )


def _quoted(text):
    return json.dumps(text, ensure_ascii=False)


def _expectation(condition):
    """A save condition as `(holds(current), text)`."""
    tag = condition[0]
    if tag == "any":
        return (lambda current: True), "any version"
    if tag == "absent":
        return (lambda current: current is None), "no task"
    if tag == "version":
        wanted = condition[1]
        return (lambda current: current == wanted), "version %d" % wanted
    raise StoreError("invalid-input", "unknown save condition %r" % (tag,))
