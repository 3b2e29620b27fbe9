// A directory of Task files over `wasi:filesystem`: atomic writes, versions, per-Task locks,
// verified reads, crash clean-up. The JavaScript twin of `shared/format/src/dir/`, writing
// exactly its files (docs/on-disk-format.md):
//
// - `<stem>.json`: the Task, only ever replaced by renaming a complete, flushed file over it;
// - `.~<stem>.v`: its version record, `{"format":2,"version":N,"size":S,"mtime_ns":M,
//   "prev_size":PS,"prev_mtime_ns":PM,"check":C}` padded to 256 bytes, naming the size and
//   modification time of the Task file it describes and of the one that file replaced; created
//   by a rename, then overwritten in place by later saves, always before their Task file;
// - `.~<stem>.l`: the lock a writer holds for its save, created exclusively; the writer writes
//   its Task text into it and renames it over `<stem>.json`, which releases it. Broken by a
//   waiting writer once it has seen it unchanged for longer than the lease by its own monotonic
//   clock (never by its modification time against the wall clock, which a clock stepped back or
//   forward makes wrong by the size of the step);
// - `.tmp-<32 hex>`: temp files (version records on their first write), and locks moved aside
//   while being broken.
//
// - `.push/`: the Tasks' push-notification configs (`push.js`), removed with their Task.
//
// The lease guards a lock (a host that fences its components' locks also refuses to move one a
// live writer holds), so every late act of a writer that may have outlived its lease is checked
// for: ownership after a renewal, before the record, before the rename and before a delete's
// unlink, and after the rename that the Task file is the file this save wrote
// (docs/on-disk-format.md, "The lease").
//
// Every Task lives in the preopened directory, never in this instance's memory: the host runs
// several instances of the component at once, and other processes may share the directory.

import { now as monotonicNow, subscribeDuration } from 'wasi:clocks/monotonic-clock@0.2.12';
import {
  DEFAULT_LOCK_LEASE_MS,
  MAX_RECORD_BYTES,
  MAX_TASK_FILE_BYTES,
  STALE_TEMP_AGE_MS,
  StoreError,
  TEMP_PREFIX,
  U64_MAX,
  Query,
  decodeUtf8,
  encodeId,
  isTaskFileName,
  parseRecord,
  parseTask,
  RECORD_LEN,
  recordText,
  sideNames,
  timestampOf,
  utf8,
  versionOf,
} from './format.js';
import { deletePushConfigs, sweepPushTemps } from './push.js';
import {
  FOLLOW,
  NO_FOLLOW,
  ROOT,
  close,
  entryNames,
  errorCode,
  ioError,
  randomHex,
  readBytes,
  readCapped,
  removeIfStaleTemp,
  removeQuietly,
  renameInto,
  root,
  stampOf,
  syncDir,
  wallNowMs,
  writeAll,
  writeTemp,
} from './wasi.js';

const MS = 1_000_000n;
/** Lock waits: the first pause and the longest, in nanoseconds (0.2 ms doubling to 20 ms). */
const FIRST_PAUSE_NS = 200_000n;
const MAX_PAUSE_NS = 20n * MS;

function corrupt(name, reason) {
  return new StoreError('corrupt', `corrupt task file ${ROOT}${name}: ${reason}`);
}

function tooLarge(size) {
  return `is ${size} bytes, over the largest Task file read (${MAX_TASK_FILE_BYTES} bytes)`;
}

/**
 * A Task file: `{ text, stamp }`, `null` if it does not exist; `corrupt` if it is not a regular
 * file (looked at before opening it, so a link is never followed and a FIFO never blocks), is
 * larger than `MAX_TASK_FILE_BYTES` or is not UTF-8. The stamp is that of the file read.
 */
function readTaskFile(name) {
  const found = readCapped(name, MAX_TASK_FILE_BYTES, { corrupt, tooLarge });
  return found === null ? null : { text: found.text, stamp: stampOf(found.stat) };
}

/**
 * The first `limit` bytes of a small side file (version record, lock) as text; `null` if it is
 * missing, unreadable, not a regular file or not UTF-8. Never an error: side files only ever
 * count as absent.
 */
function readSmall(name, limit, { regularOnly }) {
  try {
    if (regularOnly && root().statAt(NO_FOLLOW, name).type !== 'regular-file') return null;
    const file = root().openAt(regularOnly ? NO_FOLLOW : FOLLOW, name, {}, { read: true });
    try {
      return decodeUtf8(readBytes(file, limit));
    } finally {
      close(file);
    }
  } catch {
    return null;
  }
}

/** What reading a version record found when it holds no record: none at all. */
const MISSING = null;
/**
 * What reading a version record found when it does not parse or fails its check: torn by a save
 * writing it in place at this very moment (a reader without the lock), or left unreadable by a
 * crash. A reader counts it as none (version 1); a save, which holds the lock, refuses it as
 * corrupt if the Task file exists (`RECORD_TORN`).
 */
const UNSETTLED = 'unsettled';

/** Why a save refuses a Task whose version record does not read whole under the lock. */
const RECORD_TORN =
  "the version record does not read whole, so the Task's version is unknown; remove it to count versions from 1 again";

/**
 * The version record `name`: the parsed record, `MISSING` (no record, or not a regular file),
 * or `UNSETTLED`.
 */
function readRecord(name) {
  let file;
  try {
    if (root().statAt(NO_FOLLOW, name).type !== 'regular-file') return MISSING;
    file = root().openAt(NO_FOLLOW, name, {}, { read: true });
  } catch {
    return MISSING;
  }
  try {
    return recordIn(file);
  } finally {
    close(file);
  }
}

/** What the open regular file `file` holds, read as a version record. */
function recordIn(file) {
  let text = null;
  try {
    text = decodeUtf8(readBytes(file, MAX_RECORD_BYTES));
  } catch {
    // Unreadable: unsettled, as an unparsable one.
  }
  return (text === null ? null : parseRecord(text)) ?? UNSETTLED;
}

/** A record as `versionOf` takes it: an unsettled one counts as none (version 1). */
function settled(record) {
  return record === UNSETTLED ? null : record;
}

/**
 * The version record `name` as a saver holding the lock reads it, opened once:
 * `{ record, file }`, where `file` is set when the save may overwrite the record in place (a
 * regular file of exactly `RECORD_LEN` bytes, one these stores wrote; never through a link).
 * Without `file` the save replaces the record by a rename.
 */
function openRecordForSave(name) {
  let file;
  try {
    if (root().statAt(NO_FOLLOW, name).type !== 'regular-file') return { record: MISSING, file: null };
    file = root().openAt(NO_FOLLOW, name, {}, { read: true, write: true });
  } catch {
    // Missing, or not writable here: read it as any reader would.
    return { record: readRecord(name), file: null };
  }
  try {
    const stat = file.stat();
    if (stat.type !== 'regular-file') {
      close(file);
      return { record: MISSING, file: null };
    }
    const record = recordIn(file);
    if (BigInt(stat.size) !== BigInt(RECORD_LEN)) {
      close(file);
      return { record, file: null };
    }
    return { record, file };
  } catch {
    close(file);
    return { record: readRecord(name), file: null };
  }
}

/** Nanoseconds on the monotonic clock. */
function monotonicNs() {
  return BigInt(monotonicNow());
}

/** Waits `ns` nanoseconds (the host cuts a wait at the call's deadline). */
function sleepNs(ns) {
  const pollable = subscribeDuration(ns);
  try {
    pollable.block();
  } finally {
    close(pollable);
  }
}

function formatMs(ms) {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

let swept = false;

/** The store over the preopened directory. */
export class DirStore {
  /**
   * `durable`: flush files and the directory (full durability). `leaseMs`: the lock lease;
   * every writer of one directory must use the same.
   */
  constructor(durable, leaseMs = DEFAULT_LOCK_LEASE_MS) {
    this.durable = durable;
    this.leaseMs = leaseMs;
    this.sweepOnce();
  }

  /**
   * Once per instance: removes temp files left by writers that crashed before their rename,
   * those last changed more than an hour ago (younger ones may belong to a live writer). Locks
   * are left alone: one look cannot tell a crashed writer's lock from a live one's (a lock is
   * broken only by a writer that watched it unchanged for a lease), and a lock is never read as
   * a Task; the next save of its Task breaks it. Errors are ignored: this is housekeeping, never
   * a reason to fail a call.
   */
  sweepOnce() {
    if (swept) return;
    swept = true;
    try {
      const now = wallNowMs();
      for (const name of entryNames()) removeIfStaleTemp(name, now, STALE_TEMP_AGE_MS);
      sweepPushTemps(now);
    } catch {
      // An unreadable directory shows up as an error of the call itself.
    }
  }

  /**
   * The Task with this id and its version: `{ text, version }` (version a BigInt), or `null`.
   * Lock-free: the version record is read before the Task file, and writers rename the Task
   * file before the record, so the version is never newer than the text. A file holding
   * anything but this Task is corrupt.
   */
  get(id) {
    const name = encodeId(id);
    const recordName = sideNames(name).record;
    let record = readRecord(recordName);
    // A record that does not read whole is, almost always, being written in place by a save
    // right now: read it again. One that stays unsettled counts as none (version 1, never newer
    // than the text), and reads never wait for a lock.
    for (let i = 0; i < 3 && record === UNSETTLED; i++) record = readRecord(recordName);
    record = settled(record);
    const found = readTaskFile(name);
    if (found === null) return null;
    let storedId;
    try {
      storedId = parseTask(found.text).id;
    } catch (e) {
      throw corrupt(name, e.message);
    }
    if (storedId !== id) {
      throw corrupt(name, `holds task ${JSON.stringify(storedId)}, not ${JSON.stringify(id)}`);
    }
    return { text: found.text, version: versionOf(record, found.stamp) };
  }

  /**
   * Saves Task text (checked first, then written exactly as given) if `condition` holds (the
   * WIT `condition`: `{ tag: 'any' | 'absent' }` or `{ tag: 'version', val }`), as one atomic
   * step against every writer following the protocol. Returns the new version (a BigInt).
   */
  save(text, condition = { tag: 'any' }) {
    let id;
    try {
      id = parseTask(text).id;
    } catch (e) {
      throw new StoreError('invalid-input', e.message);
    }
    const expected = expectation(condition);
    const name = encodeId(id);
    const { record: recordName, lock: lockName } = sideNames(name);
    const temps = [];
    let lock = null;
    let inPlace = null;
    try {
      // The lock is the Task's temp file: taken, the version checked, the text written into
      // it, the record written, then renamed over the Task file (which releases it).
      lock = this.lock(lockName);
      const opened = openRecordForSave(recordName);
      inPlace = opened.file;
      let found;
      try {
        const stat = root().statAt(NO_FOLLOW, name);
        // No rename could replace a directory: refused before anything is written.
        if (stat.type === 'directory') throw 'is-directory';
        found = stampOf(stat);
      } catch (e) {
        if (errorCode(e) !== 'no-entry') throw ioError('replace', name, e);
        found = null;
      }
      // Under the lock no one writes the record, so one that does not read whole was torn by a
      // crash or a disk fault: the Task's version is unknown, and counting from 1 again would
      // let an old conditional save win. Nothing is written until someone looks. (Lock-free
      // reads count it as none: there it is most likely a save writing it in place at that very
      // moment.)
      if (opened.record === UNSETTLED && found !== null) throw corrupt(recordName, RECORD_TORN);
      const current = found === null ? null : versionOf(opened.record, found);
      if (!expected.holds(current)) {
        const what = current === null ? 'no task' : `version ${current}`;
        throw new StoreError(
          'conflict',
          `${ROOT}${name} changed: expected ${expected.text}, found ${what}`,
          current,
        );
      }
      const version = current === null ? 1n : current < U64_MAX ? current + 1n : U64_MAX;
      let stamp;
      try {
        const bytes = utf8(text);
        writeAll(lock.file, bytes, lockName);
        const first = bytes.subarray(0, 1);
        const stampNow = () => (found === null ? stampOf(lock.file.stat()) : stampApart(lock.file, found, first));
        stamp = stampNow();
        if (this.durable) lock.file.syncData();
        // Waiters break a lock they saw unchanged for a lease, and the flush did not change it:
        // after a slow flush the lock is renewed (its first byte written again, which moves its
        // time to now), so a loaded disk alone does not make the save give up. A flush that
        // outlasted the whole lease may have had the lock broken and taken meanwhile: the lock
        // is renewed first and then looked at, and if it is no longer ours the save gives up
        // here, before it writes the record another writer's save relies on. The new time is
        // not flushed: a power loss before the file system writes it back leaves the old one,
        // and the Task then reads one version past the record, never older than it is.
        if ((monotonicNs() - lock.acquired) * 4n > BigInt(this.leaseMs) * MS) {
          const renewed = monotonicNs();
          writeAll(lock.file, first, lockName); // the same byte: the time moves to now
          stamp = stampNow();
          if (!isOurs(lock)) throw lockLost(lock, this.leaseMs);
          lock.acquired = renewed;
        }
      } catch (e) {
        throw e instanceof StoreError ? e : ioError('write', lockName, e);
      }
      const recordBytes = utf8(recordText({ version, ...stamp, prev: found }));
      this.checkYoung(lock);
      // The record first, in place when these stores wrote it (one short write, no new file);
      // a missing or foreign one is replaced by a rename. A reader between this and the
      // rename below sees the record and the file it replaces: one version less.
      // A brand-new Task's record (no record, no Task file) is created in place too: if a
      // power loss keeps the Task file and not the record's text, it reads as version 1, which
      // it is. A record that replaces another is written whole and flushed before it is
      // renamed into place. A record written in place is flushed after the rename, with the
      // directory: the acknowledgement waits for both, and the lock is not held for them.
      if (inPlace === null && opened.record === MISSING && found === null) {
        try {
          inPlace = root().openAt(NO_FOLLOW, recordName, { create: true, exclusive: true }, { write: true });
        } catch {
          inPlace = null; // something is there after all: replaced by a rename below
        }
      }
      if (inPlace !== null) {
        try {
          writeAll(inPlace, recordBytes, recordName);
        } catch (e) {
          throw e instanceof StoreError ? e : ioError('write', recordName, e);
        }
      } else {
        const next = writeTemp(recordBytes, this.durable);
        temps.push(next.name);
        renameInto(next.name, recordName);
        temps.shift();
      }
      this.checkHeld(lock);
      this.renameOver(lock, name);
      if (this.durable) {
        // The new Task file is in place: a flush that fails now leaves a save that may or may
        // not survive a power loss, which only a re-read can tell.
        try {
          if (inPlace !== null) inPlace.syncData();
          syncDir();
        } catch (e) {
          throw new StoreError(
            'outcome-unknown',
            `cannot flush ${inPlace !== null ? recordName : 'the directory'} after the save's ` +
              `rename (${e && e.message ? e.message : errorCode(e)}): the save may or may not ` +
              'survive a power loss; read the Task again before saving again',
          );
        }
      }
      return version;
    } finally {
      close(inPlace);
      if (lock !== null) this.unlock(lock);
      for (const temp of temps) removeQuietly(temp);
    }
  }

  /**
   * One page of the Tasks matching the WIT `list-query`: `{ tasks, nextPageToken, totalSize }`,
   * newest status timestamp first. Reads every Task file but keeps only the texts of the
   * page's current candidates (at most page size + 1).
   */
  list(witQuery) {
    const query = new Query(witQuery);
    const page = query.collector();
    for (const name of entryNames()) {
      if (!isTaskFileName(name)) continue;
      const found = readTaskFile(name);
      if (found === null) continue; // deleted meanwhile
      let parsed;
      try {
        parsed = parseTask(found.text);
      } catch (e) {
        throw corrupt(name, e.message);
      }
      if (encodeId(parsed.id) !== name) {
        throw corrupt(name, `holds task ${JSON.stringify(parsed.id)}, which belongs in another file`);
      }
      const key = { timestamp: timestampOf(parsed.task), id: parsed.id };
      if (query.matches(parsed.task, key.timestamp)) {
        page.count();
        page.offer(key, found.text);
      }
    }
    const cut = page.finish();
    return {
      tasks: cut.items.map(([, text]) => text),
      nextPageToken: cut.nextPageToken,
      totalSize: BigInt(cut.totalSize),
    };
  }

  /**
   * Removes the Task with this id (under its lock): `true` if there was one. Its push configs
   * go after it (the lock released), whether or not the Task file existed: a crash in between
   * leaves configs of no Task, which the next delete of that id removes.
   */
  delete(id) {
    const existed = this.deleteTask(id);
    deletePushConfigs(id, this.durable);
    return existed;
  }

  /** The Task file and its version record, under the Task's lock. */
  deleteTask(id) {
    const name = encodeId(id);
    const { record: recordName, lock: lockName } = sideNames(name);
    const lock = this.lock(lockName);
    try {
      // The last check before the Task file goes: a lock broken (and perhaps taken by a save)
      // meanwhile is not ours to delete under.
      this.checkHeld(lock);
      let existed = true;
      try {
        root().unlinkFileAt(name);
      } catch (e) {
        if (errorCode(e) !== 'no-entry') throw ioError('delete', name, e);
        existed = false;
      }
      // The record goes after the Task file: a crash in between leaves a record without a
      // Task, which reads as no Task.
      removeQuietly(recordName);
      if (existed && this.durable) syncDir();
      return existed;
    } finally {
      this.unlock(lock);
    }
  }

  /**
   * Takes the lock `name`: a file created exclusively and kept open (a save writes its Task
   * text into it). Waits (backing off from 0.2 ms up to 20 ms) while another writer holds it, at
   * most three leases.
   *
   * A lock is broken only when this waiter has seen it unchanged (`look`: the same file, length
   * and modification time) for longer than the lease, by its own monotonic clock: a live writer
   * renews its lock, which changes it. Never by the file's modification time against the wall
   * clock, which a clock stepped back (a crashed writer's lock blocking its Task for as long as
   * the step) or forward (every live lock broken) makes wrong.
   */
  lock(name) {
    const started = monotonicNs();
    const leaseNs = BigInt(this.leaseMs) * MS;
    let pause = FIRST_PAUSE_NS;
    // The lock another writer holds as this waiter first saw it unchanged, and since when.
    let watched = null;
    for (;;) {
      let file = null;
      try {
        file = root().openAt(NO_FOLLOW, name, { create: true, exclusive: true }, { write: true });
      } catch (e) {
        if (errorCode(e) !== 'exist') throw ioError('create lock', name, e);
      }
      if (file !== null) {
        let identity = null;
        try {
          identity = hashText(file.metadataHash());
        } catch {
          // Told by its stamp instead (`isOurs`).
        }
        return { name, file, identity, acquired: monotonicNs(), renamed: false };
      }
      let seen = null;
      try {
        seen = this.look(name);
      } catch (e) {
        if (errorCode(e) === 'no-entry') continue; // released meanwhile: create it now
      }
      if (seen === null) {
        watched = null;
      } else if (watched !== null && watched.seen === seen) {
        if (monotonicNs() - watched.since > leaseNs) {
          this.breakLock(name);
          watched = null;
          continue;
        }
      } else {
        watched = { seen, since: monotonicNs() };
      }
      if (monotonicNs() - started > 3n * leaseNs) {
        throw new StoreError(
          'io',
          `cannot lock ${ROOT}${name}: another writer kept the task locked for over ${formatMs(3 * this.leaseMs)}`,
        );
      }
      sleepNs(pause);
      pause = pause * 2n < MAX_PAUSE_NS ? pause * 2n : MAX_PAUSE_NS;
    }
  }

  /**
   * What is at the lock name `name` (not followed), as a waiter compares it from one look to the
   * next, as one string: its identity where the host tells it (`metadata-hash-at`, as `isOurs`
   * takes it), length and modification time. A live writer renewing its lock, or a new lock in
   * its place, changes it. Throws the WASI error of a failed look (`no-entry`: released).
   */
  look(name) {
    const stamp = stampOf(root().statAt(NO_FOLLOW, name));
    let identity = '';
    try {
      identity = hashText(root().metadataHashAt(NO_FOLLOW, name));
    } catch (e) {
      if (errorCode(e) === 'no-entry') throw e;
      // Told by its stamp alone.
    }
    return `${identity} ${stamp.size} ${stamp.mtimeNs}`;
  }

  /**
   * Breaks a lock seen unchanged for longer than the lease: moves it aside (one breaker wins
   * the rename; a host that fences its components' locks refuses to move one a live writer
   * holds, and then nothing is done) and removes what it moved, whatever it turns out to be. If
   * a newer lock replaced the stale one between the look and the rename, its writer finds its
   * lock gone at its next check and gives up, having changed nothing. A lock is never put back:
   * that could replace a lock taken meanwhile, and then two writers would both win one version.
   */
  breakLock(name) {
    const aside = TEMP_PREFIX + randomHex();
    try {
      root().renameAt(name, root(), aside);
    } catch {
      return; // gone already, or refused: the waiter goes on waiting
    }
    removeQuietly(aside); // if this fails it stays aside, and a sweep removes it in an hour
  }

  /** Fails unless `lock` was taken less than half the lease ago (no one may have broken it). */
  checkYoung(lock) {
    if ((monotonicNs() - lock.acquired) * 2n < BigInt(this.leaseMs) * MS) return;
    throw lockLost(lock, this.leaseMs);
  }

  /**
   * Fails unless `lock` is still ours and young enough that no one may break it before the
   * rename that follows: the last check before a save changes the Task file.
   */
  checkHeld(lock) {
    this.checkYoung(lock);
    if (!isOurs(lock)) throw lockLost(lock, this.leaseMs);
  }

  /**
   * Renames the lock (holding the Task text) over `target`: the save's one change of the Task
   * file, which releases the lock. A rename that returns half a lease or more after the lock
   * was taken or renewed may have come after another writer broke and took the lock (this
   * store cannot see the host's kernel locks): unless the Task file is then this save's own
   * file, the save's outcome is unknown, and the writer that stalled is never told it won.
   */
  renameOver(lock, target) {
    renameInto(lock.name, target);
    lock.renamed = true;
    const late = monotonicNs() - lock.acquired;
    if (late * 2n < BigInt(this.leaseMs) * MS) return;
    let ours = false;
    if (lock.identity !== null) {
      try {
        ours = hashText(root().metadataHashAt(NO_FOLLOW, target)) === lock.identity;
      } catch {
        ours = false;
      }
    }
    if (ours) return;
    throw new StoreError(
      'outcome-unknown',
      `the save's rename over ${ROOT}${target} came ${formatMs(Number(late / MS))} after it ` +
        "took or renewed its lock, past half the lock's lease, and the Task file is not the " +
        'file it wrote: another writer may have taken the lock meanwhile, so whether this save ' +
        'took effect is unknown; read the Task again before saving again',
    );
  }

  /** Releases a lock a save did not rename over its Task file: removed if it is still ours. */
  unlock(lock) {
    if (!lock.renamed && isOurs(lock)) removeQuietly(lock.name);
    close(lock.file);
  }
}

function lockLost(lock, leaseMs) {
  return new StoreError(
    'io',
    `cannot save under lock ${ROOT}${lock.name}: the lock was held past half its lease ` +
      `(${formatMs(leaseMs / 2)}) or taken over; nothing was saved`,
  );
}

/**
 * Whether the lock file at `lock.name` is still the one this writer created: by identity (the
 * host's `metadata-hash`, of device and inode, while the file is held open no other can take
 * it), or where that cannot be told, by its stamp.
 */
function isOurs(lock) {
  try {
    if (lock.identity !== null) return hashText(root().metadataHashAt(NO_FOLLOW, lock.name)) === lock.identity;
    const there = stampOf(root().statAt(NO_FOLLOW, lock.name));
    const mine = stampOf(lock.file.stat());
    return there.size === mine.size && there.mtimeNs === mine.mtimeNs;
  } catch {
    return false;
  }
}

/**
 * A file's identity from its `metadata-hash`: the lower 64 bits only. wasmtime hashes device
 * and inode into all 128; preview2-shim (the store in Node) puts the inode in `lower` and the
 * modification time in `upper`, which every write to the lock changes.
 */
function hashText(hash) {
  return `${hash.lower}`;
}

/**
 * The stamp of the open file `file`, made to differ from `old` (the Task file a save replaces)
 * if it does not: its first byte (`first`, as written) written again after a pause that lets
 * the file system's clock tick (1 ms, doubling), which moves its modification time to now.
 * Readers tell the two files apart by their stamps alone. No `set-times`: preview2-shim (the
 * store in Node) sets those times in the wrong unit.
 */
function stampApart(file, old, first) {
  let stamp = stampOf(file.stat());
  let pause = MS;
  while (stamp.size === old.size && stamp.mtimeNs === old.mtimeNs) {
    if (pause > 2000n * MS) {
      throw new StoreError('io', 'the file system keeps no modification time that tells this save from the last one');
    }
    sleepNs(pause);
    pause *= 2n;
    writeAll(file, first, '');
    stamp = stampOf(file.stat());
  }
  return stamp;
}

/** The WIT `condition` as `{ holds(current), text }` (`current`: a BigInt version or `null`). */
function expectation(condition) {
  const tag = condition?.tag ?? 'any';
  switch (tag) {
    case 'any':
      return { holds: () => true, text: 'any version' };
    case 'absent':
      return { holds: (current) => current === null, text: 'no task' };
    case 'version': {
      const wanted = BigInt(condition.val);
      return { holds: (current) => current === wanted, text: `version ${wanted}` };
    }
    default:
      throw new StoreError('invalid-input', `unknown save condition ${JSON.stringify(tag)}`);
  }
}
