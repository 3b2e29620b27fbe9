// Tests of the store itself (src/index.js over src/dir.js) in Node: its `wasi:` imports are
// preview2-shim's (test-support/), over a real temp directory, called through the WIT exports
// exactly as the component exports them. The component build runs the same sources inside
// StarlingMonkey; tests/tests/all/js_store.rs runs the conformance suite and the Rust↔JavaScript
// interchange against that build.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { types as wasiFilesystem } from '@bytecodealliance/preview2-shim/filesystem';
import { attempt, openInstance } from '../test-support/store.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dirs = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'tn-js-store-'));
  dirs.push(dir);
  return dir;
}

const names = (dir) => readdirSync(dir).sort();
const any = { tag: 'any' };
const absent = { tag: 'absent' };
const at = (v) => ({ tag: 'version', val: BigInt(v) });
const task = (id, extra = {}) => JSON.stringify({ id, ...extra });

/**
 * The record text the Rust store writes for the Task file `name` as it is now: the line with
 * its check (computed here with Node's own SHA-256), padded to 128 bytes.
 */
/**
 * The record the Rust store writes for version `version` of the Task file `name`, replacing a
 * file with the stamp `prev` (`{ size, mtimeNs }` from a `bigint` stat) or none.
 */
function expectedRecord(dir, name, version, prev = null) {
  const st = statSync(join(dir, name), { bigint: true });
  const fields = prev === null ? '' : ` ${prev.size} ${prev.mtimeNs}`;
  const check = createHash('sha256')
    .update(`${version} ${st.size} ${st.mtimeNs}${fields}`)
    .digest('hex')
    .slice(0, 16);
  const prevMembers = prev === null ? '' : `,"prev_size":${prev.size},"prev_mtime_ns":${prev.mtimeNs}`;
  const line = `{"format":2,"version":${version},"size":${st.size},"mtime_ns":${st.mtimeNs}${prevMembers},"check":"${check}"}`;
  return line.padEnd(255, ' ') + '\n';
}

/** Sets a file's modification time `seconds` into the past. */
function age(path, seconds) {
  const t = Date.now() / 1000 - seconds;
  utimesSync(path, t, t);
}

/** A WIT result as text for a failed assertion (BigInts too). */
const shown = (r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

/** Blocks this thread for `ms` milliseconds (the store's calls are synchronous). */
function block(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Another writer's file at `path`, put there as a lock is: by a rename. */
function replaceByAnotherFile(path, text = 'someone else') {
  writeFileSync(`${path}.other`, text);
  renameSync(`${path}.other`, path);
}

/**
 * A live holder of the lock file `path` in another thread (the store's waits block this one):
 * it renews the lock every 10 ms, giving it the modification time `secondsAgo` before now (each
 * a little later than the last), until the function it resolves to is called.
 */
async function keepChanging(path, secondsAgo) {
  const stop = new SharedArrayBuffer(4);
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const { utimesSync } = require('node:fs');
     const stop = new Int32Array(workerData.stop);
     let last = 0;
     parentPort.postMessage('renewing');
     while (Atomics.load(stop, 0) === 0) {
       last = Math.max(Date.now() / 1000 - workerData.secondsAgo, last + 0.001);
       utimesSync(workerData.path, last, last);
       Atomics.wait(stop, 0, 0, 10);
     }`,
    { eval: true, workerData: { path, secondsAgo, stop } },
  );
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return async () => {
    Atomics.store(new Int32Array(stop), 0, 1);
    Atomics.notify(new Int32Array(stop), 0);
    await exited;
  };
}

test('saves count versions from 1; get returns the text with its version; delete forgets it', async () => {
  const dir = tempDir();
  const { store, catalog } = await openInstance(dir);
  assert.equal(store.get('t'), undefined);
  assert.equal(store.save(task('t', { n: 1 }), any), 1n);
  assert.deepEqual(store.get('t'), { task: task('t', { n: 1 }), version: 1n });
  assert.equal(store.save(task('t', { n: 2 }), any), 2n);
  assert.equal(store.save(task('t', { n: 3 }), at(2)), 3n);
  assert.deepEqual(store.get('t'), { task: task('t', { n: 3 }), version: 3n });
  // Another instance over the same directory sees the same version.
  const other = await openInstance(dir);
  assert.deepEqual(other.store.get('t'), { task: task('t', { n: 3 }), version: 3n });
  assert.deepEqual(names(dir), ['.~t.v', 't.json'], 'no temp files, no lock left');
  assert.equal(catalog.delete('t'), true);
  assert.deepEqual(names(dir), [], 'the record goes with the Task');
  assert.equal(catalog.delete('t'), false);
  assert.equal(store.get('t'), undefined);
  assert.equal(store.save(task('t'), absent), 1n, 'a Task saved after a delete starts at 1');
});

test('the version record is the Rust text, naming the size and mtime of the Task file and of the one it replaced', async () => {
  const dir = tempDir();
  for (const settings of [[], [['durability', 'relaxed']]]) {
    const { store } = await openInstance(dir, settings);
    const id = `a/b é ${settings.length}`;
    const stem = encodeURIComponent(id).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    assert.equal(store.save(task(id, { x: 'y' }), any), 1n);
    assert.equal(readFileSync(join(dir, `.~${stem}.v`), 'utf8'), expectedRecord(dir, `${stem}.json`, 1));
    const first = statSync(join(dir, `${stem}.json`), { bigint: true });
    assert.equal(store.save(task(id, { x: 'yy' }), any), 2n);
    const text = readFileSync(join(dir, `.~${stem}.v`), 'utf8');
    assert.equal(text, expectedRecord(dir, `${stem}.json`, 2, first));
    assert.equal(readFileSync(join(dir, `${stem}.json`), 'utf8'), task(id, { x: 'yy' }));
  }
});

test('a Task file the record does not describe is one version past it; no record is version 1', async () => {
  const dir = tempDir();
  const { store } = await openInstance(dir);
  store.save(task('t', { v: 1 }), any);
  store.save(task('t', { v: 2 }), any);
  // Replaced by a writer that knows nothing of versions (or crashed between its renames).
  writeFileSync(join(dir, 't.json'), task('t', { v: 'foreign, longer' }));
  assert.equal(store.get('t').version, 3n);
  assert.equal(store.save(task('t', { v: 4 }), at(3)), 4n);
  assert.equal(store.get('t').version, 4n);
  // A record in another key order, with spaces, still counts.
  const st = statSync(join(dir, 't.json'), { bigint: true });
  writeFileSync(join(dir, '.~t.v'), ` {"mtime_ns": ${st.mtimeNs}, "size": ${st.size}, "version": 41, "format": 1}`);
  assert.equal(store.get('t').version, 41n);
  // An unreadable record counts as none (it stays unreadable when read again), and so does
  // one whose check fails: what a reader copying it mid-write would see.
  writeFileSync(join(dir, '.~t.v'), '{"format":1,"vers');
  assert.equal(store.get('t').version, 1n);
  assert.deepEqual(names(dir), ['.~t.v', 't.json'], 'a read never takes the lock');
  // A save, holding the lock, refuses it (see the test of a torn record) until it is removed.
  assert.equal(attempt(() => store.save(task('t', { v: 5 }), any)).err?.tag, 'corrupt');
  rmSync(join(dir, '.~t.v'));
  assert.equal(store.save(task('t', { v: 5 }), at(1)), 2n);
  const good = readFileSync(join(dir, '.~t.v'), 'utf8');
  assert.match(good, /"version":2,/);
  writeFileSync(join(dir, '.~t.v'), good.replace('"version":2,', '"version":9,'));
  assert.equal(store.get('t').version, 1n);
  writeFileSync(join(dir, '.~t.v'), good);
  assert.equal(store.get('t').version, 2n);
  const inode = statSync(join(dir, '.~t.v')).ino;
  assert.equal(store.save(task('t', { v: 6 }), at(2)), 3n);
  assert.equal(statSync(join(dir, '.~t.v')).ino, inode, 'a 256-byte record is overwritten in place');
  writeFileSync(join(dir, '.~t.v'), '{"format":1,"vers');
  rmSync(join(dir, '.~t.v'));
  assert.equal(store.get('t').version, 1n);
  assert.equal(store.save(task('t', { v: 2 }), at(1)), 2n);
  // A record without a Task file is no Task.
  rmSync(join(dir, 't.json'));
  assert.equal(store.get('t'), undefined);
  assert.equal(store.save(task('t'), absent), 1n);
  assert.equal(readFileSync(join(dir, '.~t.v'), 'utf8'), expectedRecord(dir, 't.json', 1));
});

test('a version record that does not read whole under the lock is corrupt: saves refuse it, writing nothing', async () => {
  // Under the lock no one writes the record, so a torn one was left by a crash or a disk fault:
  // the Task's version is unknown, and counting from 1 again would let an old conditional save
  // win. A reader without the lock still counts it as none.
  const dir = tempDir();
  const { store } = await openInstance(dir);
  for (const n of [1, 2, 3]) assert.equal(store.save(task('t', { n }), any), BigInt(n));
  const good = readFileSync(join(dir, '.~t.v'), 'utf8');
  assert.match(good, /"version":3,/);
  const torn = good.replace('"version":3,', '"version":9,'); // its check fails
  writeFileSync(join(dir, '.~t.v'), torn);
  const text = readFileSync(join(dir, 't.json'), 'utf8');
  for (const condition of [any, at(1)]) {
    const r = attempt(() => store.save(task('t', { n: 'lost' }), condition));
    assert.equal(r.err?.tag, 'corrupt', shown(r));
    assert.equal(
      r.err.val,
      "corrupt task file /.~t.v: the version record does not read whole, so the Task's version is unknown; " +
        'remove it to count versions from 1 again',
    );
    assert.equal(readFileSync(join(dir, '.~t.v'), 'utf8'), torn, 'the record is left as it is');
    assert.equal(readFileSync(join(dir, 't.json'), 'utf8'), text, 'the Task is left as it is');
    assert.deepEqual(names(dir), ['.~t.v', 't.json'], 'no lock left, no temp file');
  }
  assert.deepEqual(store.get('t'), { task: text, version: 1n }, 'a read counts it as none');
  rmSync(join(dir, '.~t.v'));
  assert.equal(store.save(task('t', { n: 4 }), any), 2n, 'counted from 1 again once it is removed');
  assert.deepEqual(store.get('t'), { task: task('t', { n: 4 }), version: 2n });
  // Without a Task file a torn record describes nothing: the Task is new, version 1.
  writeFileSync(join(dir, '.~t.v'), torn);
  rmSync(join(dir, 't.json'));
  assert.equal(store.save(task('t', { n: 5 }), absent), 1n);
  assert.deepEqual(store.get('t'), { task: task('t', { n: 5 }), version: 1n });
});

test('conditional saves hold or conflict with the current version, and a conflict changes nothing', async () => {
  const dir = tempDir();
  const { store } = await openInstance(dir);
  const miss = attempt(() => store.save(task('c', { n: 0 }), at(1)));
  assert.deepEqual(miss.err?.tag, 'conflict');
  assert.equal(miss.err.val.current, undefined, 'no Task: current is none');
  assert.match(miss.err.val.message, /^\/c\.json changed: expected version 1, found no task$/);
  assert.deepEqual(names(dir), [], 'nothing written, no temp file, no lock');

  assert.equal(store.save(task('c', { n: 1 }), absent), 1n);
  const before = readFileSync(join(dir, 'c.json'));
  const record = readFileSync(join(dir, '.~c.v'));
  for (const [condition, message] of [
    [absent, /expected no task, found version 1$/],
    [at(2), /expected version 2, found version 1$/],
    [at(0), /expected version 0, found version 1$/],
  ]) {
    const r = attempt(() => store.save(task('c', { n: 'lost' }), condition));
    assert.equal(r.err?.tag, 'conflict');
    assert.equal(r.err.val.current, 1n);
    assert.match(r.err.val.message, message);
  }
  assert.deepEqual(readFileSync(join(dir, 'c.json')), before);
  assert.deepEqual(readFileSync(join(dir, '.~c.v')), record);
  assert.deepEqual(names(dir), ['.~c.v', 'c.json']);
  assert.equal(store.save(task('c', { n: 2 }), at(1)), 2n);
  // Of two writers that read version 2, only the first wins.
  assert.equal(store.save(task('c', { n: 3 }), at(2)), 3n);
  const late = attempt(() => store.save(task('c', { n: 'late' }), at(2)));
  assert.equal(late.err?.val.current, 3n);
  assert.deepEqual(store.get('c'), { task: task('c', { n: 3 }), version: 3n });
});

test('a live lock makes a save wait for three leases, then fail with io naming it, changing nothing', async () => {
  const dir = tempDir();
  // A 400 ms lease against a renewal every 10 ms: the holder would have to stall for 40 of them
  // (a loaded machine) before the waiter could see the lock unchanged for a lease.
  const { store, catalog } = await openInstance(dir, [['lock-lease-ms', '400']]);
  store.save(task('l', { n: 1 }), any);
  writeFileSync(join(dir, '.~l.l'), 'ffffffffffffffffffffffffffffffff');
  // Its holder renews it: never unchanged for a lease while the save waits.
  const stop = await keepChanging(join(dir, '.~l.l'), 0);
  let r;
  let waited;
  let deleted;
  try {
    const started = Date.now();
    r = attempt(() => store.save(task('l', { n: 2 }), any));
    waited = Date.now() - started;
    deleted = attempt(() => catalog.delete('l'));
  } finally {
    await stop();
  }
  assert.equal(r.err?.tag, 'io', shown(r));
  assert.match(r.err.val, /^cannot lock \/\.~l\.l: another writer kept the task locked for over 1200ms$/);
  assert.ok(waited >= 1200, `waited ${waited} ms`);
  assert.equal(deleted.err?.tag, 'io', 'delete waits for the lock too');
  assert.equal(readFileSync(join(dir, '.~l.l'), 'utf8'), 'ffffffffffffffffffffffffffffffff', 'not ours to remove');
  assert.deepEqual(store.get('l'), { task: task('l', { n: 1 }), version: 1n });
  assert.deepEqual(names(dir), ['.~l.l', '.~l.v', 'l.json'], 'temp files removed');
});

test('a save whose flush outlasts half the lease renews its lock and succeeds', async () => {
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  // A disk that takes 1.5 s more for every flush of a save's text, under a 2 s lease: 30 ms of
  // it real (so the renewal moves the lock's time), the rest by moving back when the lock was
  // taken. After the renewal the save has half the lease, 1 s, for its few remaining steps.
  class SlowDisk extends DirStore {
    lock(name) {
      const lock = super.lock(name);
      const syncData = lock.file.syncData.bind(lock.file);
      lock.file.syncData = () => {
        syncData();
        block(30);
        lock.acquired -= 1470n * 1_000_000n;
      };
      return lock;
    }
  }
  const s = new SlowDisk(true, 2000);
  assert.equal(s.save(task('slow', { n: 1 })), 1n);
  assert.equal(s.save(task('slow', { n: 2 })), 2n, 'renewed, not given up');
  const store = new DirStore(true, 2000);
  assert.deepEqual(store.get('slow'), { text: task('slow', { n: 2 }), version: 2n });
  assert.equal(store.save(task('slow', { n: 3 }), at(2)), 3n, 'the record describes the renewed file');
  assert.deepEqual(names(dir), ['.~slow.v', 'slow.json']);
});

test('a dead lock seen unchanged for a lease is broken and the save goes ahead', async () => {
  const dir = tempDir();
  const { store, catalog } = await openInstance(dir, [['lock-lease-ms', '400']]);
  store.save(task('s', { n: 1 }), any);
  writeFileSync(join(dir, '.~s.l'), '0123456789abcdef0123456789abcdef');
  age(join(dir, '.~s.l'), 2);
  const started = Date.now();
  assert.equal(store.save(task('s', { n: 2 }), at(1)), 2n);
  assert.ok(Date.now() - started >= 400, 'watched for a lease first');
  assert.deepEqual(names(dir), ['.~s.v', 's.json'], 'the stale lock is gone, nothing left aside');
  writeFileSync(join(dir, '.~s.l'), '');
  assert.equal(catalog.delete('s'), true, 'delete breaks a stale lock too');
  assert.deepEqual(names(dir), []);
});

test('a dead lock from the future is broken after one lease of the waiter\'s own clock', async () => {
  // Its modification time an hour ahead (a clock stepped back since it was written): by the
  // file's time against the wall clock it looked younger than the lease for an hour, and the
  // Task could not be saved.
  const dir = tempDir();
  const { store } = await openInstance(dir, [['lock-lease-ms', '400']]);
  store.save(task('f', { n: 1 }), any);
  writeFileSync(join(dir, '.~f.l'), 'dead writer');
  age(join(dir, '.~f.l'), -3600);
  const started = Date.now();
  assert.equal(store.save(task('f', { n: 2 }), at(1)), 2n);
  const waited = Date.now() - started;
  assert.ok(waited >= 400 && waited < 1200, `broken after one lease, before the three a waiter gives up at: ${waited} ms`);
  assert.deepEqual(names(dir), ['.~f.v', 'f.json']);
  assert.deepEqual(store.get('f'), { task: task('f', { n: 2 }), version: 2n });
});

test('a lock renewed with modification times long past is never broken', async () => {
  // A live holder whose clock is far behind (or the waiter's stepped forward): by the file's
  // time against the wall clock the lock looked stale at once and was broken under its writer.
  const dir = tempDir();
  const { store } = await openInstance(dir, [['lock-lease-ms', '400']]); // renewed every 10 ms
  store.save(task('p', { n: 1 }), any);
  writeFileSync(join(dir, '.~p.l'), 'live writer');
  const stop = await keepChanging(join(dir, '.~p.l'), 3600);
  let r;
  try {
    r = attempt(() => store.save(task('p', { n: 2 }), any));
  } finally {
    await stop();
  }
  assert.match(r.err?.val ?? '', /^cannot lock \/\.~p\.l: another writer kept the task locked for over 1200ms$/, shown(r));
  assert.equal(readFileSync(join(dir, '.~p.l'), 'utf8'), 'live writer', 'not broken');
  assert.deepEqual(store.get('p'), { task: task('p', { n: 1 }), version: 1n });
});

test('breaking a lock never puts one back: a fresh lock moved aside is removed, and the waiter takes the lock', async () => {
  // Between the waiter's last look and its rename the stale lock is broken by another writer,
  // which takes the lock afresh: the rename moves that fresh lock aside. Putting it back could
  // replace a lock taken meanwhile (two writers winning one version); it is removed, and its
  // writer finds its lock gone at its next check.
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  const afterBreak = [];
  class Raced extends DirStore {
    breakLock(name) {
      replaceByAnotherFile(join(dir, name), 'fresh lock');
      super.breakLock(name);
      afterBreak.push(names(dir));
    }
  }
  writeFileSync(join(dir, '.~b.l'), 'dead writer');
  const s = new Raced(true, 400);
  assert.equal(s.save(task('b'), absent), 1n, 'the waiter then takes the lock');
  assert.deepEqual(afterBreak, [[]], 'nothing put back, nothing left aside');
  assert.deepEqual(names(dir), ['.~b.v', 'b.json']);
  assert.deepEqual(s.get('b'), { text: task('b'), version: 1n });
});

test('a lock the host refuses to move is waited for, not broken', async () => {
  // A host that fences its components' locks refuses to rename one a live writer holds (busy):
  // the waiter does nothing and keeps waiting, then gives up after three leases.
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  const s = new DirStore(true, 50);
  writeFileSync(join(dir, '.~h.l'), 'held');
  const renameAt = wasiFilesystem.Descriptor.prototype.renameAt;
  wasiFilesystem.Descriptor.prototype.renameAt = function (from, ...rest) {
    if (from === '.~h.l') throw 'busy';
    return renameAt.call(this, from, ...rest);
  };
  let r;
  try {
    r = attempt(() => s.save(task('h'), any));
  } finally {
    wasiFilesystem.Descriptor.prototype.renameAt = renameAt;
  }
  assert.equal(r.err?.tag, 'io', shown(r));
  assert.match(r.err.message, /^cannot lock \/\.~h\.l/);
  assert.deepEqual(names(dir), ['.~h.l']);
});

test('a flush that fails after the rename is an unknown outcome', async () => {
  // The new Task file is in place when the directory flush fails: whether the save survives a
  // power loss is unknown, and the caller is told so (not "io", which promises that nothing
  // changed).
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  const s = new DirStore(true, 400);
  assert.equal(s.save(task('u', { n: 1 }), any), 1n);
  const sync = wasiFilesystem.Descriptor.prototype.sync;
  wasiFilesystem.Descriptor.prototype.sync = function () {
    throw 'io';
  };
  let r;
  try {
    r = attempt(() => s.save(task('u', { n: 2 }), at(1)));
  } finally {
    wasiFilesystem.Descriptor.prototype.sync = sync;
  }
  assert.equal(r.err?.tag, 'outcome-unknown', shown(r));
  assert.match(r.err.message, /after the save's rename/);
  // Reading again tells: here the save did take effect.
  assert.deepEqual(s.get('u'), { text: task('u', { n: 2 }), version: 2n });
});

test('a rename past half the lease is not acknowledged unless it moved its own file', async () => {
  // The sequence without kernel locks: the writer stalls just before its rename, past
  // half its lease, and meanwhile its lock was broken and taken by another writer. Its rename
  // then moves that writer's lock over the Task: it must not be told it won. A rename as late
  // that moved its own file is acknowledged.
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  const s = new DirStore(true, 100);
  assert.equal(s.save(task('r', { n: 1 }), any), 1n);
  const renameAt = wasiFilesystem.Descriptor.prototype.renameAt;
  const stalled = (takenOver) => {
    wasiFilesystem.Descriptor.prototype.renameAt = function (from, ...rest) {
      if (from === '.~r.l') {
        block(80);
        if (takenOver) replaceByAnotherFile(join(dir, '.~r.l'));
      }
      return renameAt.call(this, from, ...rest);
    };
  };
  let r;
  try {
    stalled(true);
    r = attempt(() => s.save(task('r', { n: 2 }), at(1)));
    stalled(false);
    const late = attempt(() => s.save(task('r', { n: 3 }), any));
    assert.ok('ok' in late, shown(late));
  } finally {
    wasiFilesystem.Descriptor.prototype.renameAt = renameAt;
  }
  assert.equal(r.err?.tag, 'outcome-unknown', shown(r));
  assert.match(r.err.message, /past half the lock's lease/);
  assert.equal(JSON.parse(s.get('r').text).n, 3);
});

test('a slow flush renews, then checks, and a lock taken over meanwhile writes no record', async () => {
  // The flush takes longer than a quarter lease, and meanwhile the lock was broken and taken by
  // another writer. The save renews, then finds the lock is not its own and gives up before
  // writing the record: checking only later, it wrote its record over the one the other
  // writer's save relies on.
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  let flushes = 0;
  class TakenOver extends DirStore {
    lock(name) {
      const lock = super.lock(name);
      const syncData = lock.file.syncData.bind(lock.file);
      lock.file.syncData = () => {
        syncData();
        flushes++;
        block(150);
        replaceByAnotherFile(join(dir, name));
      };
      return lock;
    }
  }
  const s = new DirStore(true, 400);
  assert.equal(s.save(task('s', { n: 1 })), 1n);
  assert.equal(s.save(task('s', { n: 2 })), 2n);
  const record = readFileSync(join(dir, '.~s.v'));
  const slow = new TakenOver(true, 400);
  assert.throws(
    () => slow.save(task('s', { n: 3 })),
    (e) => e.tag === 'io' && /^cannot save under lock \/\.~s\.l: .*taken over; nothing was saved$/.test(e.message),
  );
  assert.equal(flushes, 1);
  assert.deepEqual(readFileSync(join(dir, '.~s.v')), record, 'the record was not rewritten');
  assert.equal(readFileSync(join(dir, '.~s.l'), 'utf8'), 'someone else', 'not ours: left alone');
  assert.deepEqual(s.get('s'), { text: task('s', { n: 2 }), version: 2n });
});

test('a delete whose lock was taken over or held past half its lease removes nothing', async () => {
  // The delete checks its lock is still its own, and young, right before it removes the Task
  // file: a lock broken (and perhaps taken by a save) meanwhile is not its to delete under.
  const dir = tempDir();
  const { DirStore, pushConfigs } = await openInstance(dir);
  const s = new DirStore(true, 400);
  assert.equal(s.save(task('d')), 1n);
  pushConfigs.set('d', JSON.stringify({ id: 'c', url: 'https://example.com/c' }));
  const text = readFileSync(join(dir, 'd.json'), 'utf8');
  const record = readFileSync(join(dir, '.~d.v'), 'utf8');
  for (const [how, lose, left] of [
    ['taken over', (lock) => replaceByAnotherFile(join(dir, lock.name)), ['.push', '.~d.l', '.~d.v', 'd.json']],
    ['held too long', (lock) => (lock.acquired -= 300n * 1_000_000n), ['.push', '.~d.v', 'd.json']],
  ]) {
    class Lost extends DirStore {
      lock(name) {
        const lock = super.lock(name);
        lose(lock);
        return lock;
      }
    }
    const r = attempt(() => new Lost(true, 400).delete('d'));
    assert.equal(r.err?.tag, 'io', `${how}: ${shown(r)}`);
    assert.match(r.err.message, /^cannot save under lock \/\.~d\.l: the lock was held past half its lease \(200ms\) or taken over; nothing was saved$/);
    assert.equal(readFileSync(join(dir, 'd.json'), 'utf8'), text, how);
    assert.equal(readFileSync(join(dir, '.~d.v'), 'utf8'), record, how);
    assert.equal(pushConfigs.list('d').length, 1, `${how}: its push configs stay`);
    assert.deepEqual(names(dir), left, `${how}: only the delete's own lock is removed`);
    rmSync(join(dir, '.~d.l'), { force: true });
  }
  assert.equal(s.delete('d'), true);
  assert.deepEqual(pushConfigs.list('d'), []);
  assert.deepEqual(names(dir).filter((n) => n !== '.push'), []);
});

test('breaking a lock removes whatever it moved aside; unlock leaves others\' locks', async () => {
  const dir = tempDir();
  const { DirStore } = await openInstance(dir);
  const s = new DirStore(true, 1000);
  // Whatever it moves aside is removed, however young: never put back.
  writeFileSync(join(dir, '.~x.l'), 'new-owner');
  s.breakLock('.~x.l');
  assert.deepEqual(names(dir), []);
  s.breakLock('.~x.l');
  assert.deepEqual(names(dir), [], 'gone already: nothing to do');

  const lock = s.lock('.~y.l');
  assert.equal(readFileSync(join(dir, '.~y.l'), 'utf8'), '', 'a lock is an empty file until a save writes into it');
  s.checkHeld(lock);
  // Broken and retaken by someone else: another file under its name.
  writeFileSync(join(dir, 'other'), 'someone else');
  renameSync(join(dir, 'other'), join(dir, '.~y.l'));
  assert.throws(() => s.checkHeld(lock), (e) => e.tag === 'io' && /taken over; nothing was saved/.test(e.message));
  s.unlock(lock);
  assert.equal(readFileSync(join(dir, '.~y.l'), 'utf8'), 'someone else', 'not ours: left alone');
  rmSync(join(dir, '.~y.l'));

  const old = s.lock('.~z.l');
  s.checkHeld(old);
  old.acquired -= 600n * 1_000_000n; // held for 600 ms of a 1000 ms lease
  assert.throws(() => s.checkHeld(old), (e) => e.tag === 'io' && /past half its lease \(500ms\)/.test(e.message));
  s.unlock(old);
  assert.deepEqual(names(dir), []);
});

test('the first call sweeps stale temp files, keeping young ones and every lock', async () => {
  // One look cannot tell a crashed writer's lock from a live one's: the sweep leaves locks to
  // the next save of their Task, which breaks a dead one after a lease.
  const dir = tempDir();
  const stale = '.tmp-00000000000000000000000000000001';
  const fresh = '.tmp-00000000000000000000000000000002';
  for (const name of [stale, fresh, '.other', '.~old.l', '.~young.l', 'keep.json']) {
    writeFileSync(join(dir, name), name === 'keep.json' ? task('keep') : '{');
  }
  age(join(dir, stale), 2 * 3600);
  age(join(dir, '.other'), 2 * 3600);
  age(join(dir, '.~old.l'), 20);
  await openInstance(dir);
  assert.deepEqual(names(dir), ['.other', fresh, '.~old.l', '.~young.l', 'keep.json']);
});

test('list: newest status timestamp first, ties by id, untimed last; filters, pages, total size', async () => {
  const dir = tempDir();
  const { store, catalog } = await openInstance(dir);
  const saved = [
    ['old', '2024-12-31T23:59:59Z', 'working', 'c1'],
    ['new', '2025-01-02T00:00:00Z', 'completed', 'c1'],
    ['tie-b', '2025-01-01T00:00:00Z', 'TASK_STATE_INPUT_REQUIRED', 'c2'],
    ['tie-a', '2025-01-01T01:00:00+01:00', 'input-required', 'c1'],
    ['ns-1', '2025-01-01T12:00:00.000000001Z', 'working', 'c2'],
    ['ns-0', '2025-01-01T12:00:00.000000000Z', 'canceled', 'c1'],
    ['🚀', '2025-01-01T00:00:00Z', 'working', 'c2'],
    ['\uff5e', '2025-01-01T00:00:00Z', 'working', 'c2'],
    ['untimed-b', null, 'working', 'c1'],
    ['untimed-a', 'not a time', 'working', 'c2'],
    ['a/b', null, 'cancelled', 'c1'],
  ];
  for (const [id, timestamp, state, contextId] of saved) {
    const status = timestamp === null ? { state } : { state, timestamp };
    store.save(task(id, { contextId, status }), any);
  }
  writeFileSync(join(dir, 'notes.txt'), 'not a task');
  const order = ['new', 'ns-1', 'ns-0', 'tie-a', 'tie-b', '\uff5e', '🚀', 'old', 'a/b', 'untimed-a', 'untimed-b'];
  const ids = (page) => page.tasks.map((t) => JSON.parse(t).id);

  const walk = (query, pageSize) => {
    const seen = [];
    let pageToken;
    for (let pages = 0; ; pages++) {
      assert.ok(pages < 50, 'the walk ends');
      const page = catalog.list({ ...query, pageSize, pageToken });
      assert.ok(page.tasks.length <= pageSize || pageSize === 0);
      seen.push({ ids: ids(page), totalSize: page.totalSize });
      pageToken = page.nextPageToken;
      if (pageToken === undefined) return seen;
      assert.equal(typeof pageToken, 'string');
    }
  };
  for (const pageSize of [0, 1, 2, 3, 11, 12]) {
    const pages = walk({}, pageSize);
    assert.deepEqual(pages.flatMap((p) => p.ids), order, `page size ${pageSize}`);
    for (const p of pages) assert.equal(p.totalSize, 11n);
  }
  assert.equal(walk({}, 2).length, 6);
  const filtered = (query) => walk(query, 2);
  const check = (query, expected) => {
    const pages = filtered(query);
    assert.deepEqual(pages.flatMap((p) => p.ids), expected, JSON.stringify(query));
    for (const p of pages) assert.equal(p.totalSize, BigInt(expected.length), JSON.stringify(query));
  };
  check({ contextId: 'c1' }, ['new', 'ns-0', 'tie-a', 'old', 'a/b', 'untimed-b']);
  check({ state: 'TASK_STATE_CANCELLED' }, ['ns-0', 'a/b']);
  check({ state: 'input-required', contextId: 'c2' }, ['tie-b']);
  check({ statusTimestampAfter: '2025-01-01T12:00:00.000000001Z' }, ['new', 'ns-1']);
  check({ statusTimestampAfter: '2025-01-01T13:00:00+01:00' }, ['new', 'ns-1', 'ns-0']);
  check({ statusTimestampAfter: '2025-01-01T00:00:00Z' }, ['new', 'ns-1', 'ns-0', 'tie-a', 'tie-b', '\uff5e', '🚀']);
  check({ contextId: 'nobody' }, []);
  const empty = catalog.list({ contextId: 'nobody', pageSize: 5 });
  assert.deepEqual(empty, { tasks: [], nextPageToken: undefined, totalSize: 0n });

  // A walk through the pages while a Task is deleted and another saved: no Task twice.
  const first = catalog.list({ pageSize: 4 });
  assert.deepEqual(ids(first), order.slice(0, 4));
  catalog.delete('tie-b');
  store.save(task('newest', { status: { state: 'working', timestamp: '2030-01-01T00:00:00Z' } }), any);
  const second = catalog.list({ pageSize: 4, pageToken: first.nextPageToken });
  assert.deepEqual(ids(second), ['\uff5e', '🚀', 'old', 'a/b']);
  assert.equal(second.totalSize, 11n);
});

test('list refuses page tokens it did not make and timestamps that are not RFC 3339', async () => {
  const dir = tempDir();
  const { store, catalog } = await openInstance(dir);
  store.save(task('a'), any);
  const b64 = (text) => Buffer.from(text).toString('base64url');
  for (const pageToken of ['garbage!', '', 'e30', b64('["soon","a"]'), b64('[null,""]'), 'x'.repeat(5000)]) {
    const r = attempt(() => catalog.list({ pageSize: 1, pageToken }));
    assert.equal(r.err?.tag, 'invalid-input', pageToken);
    assert.match(r.err.val, /^invalid page token: /);
  }
  for (const statusTimestampAfter of ['2025-01-01', 'yesterday', '2025-02-30T00:00:00Z']) {
    const r = attempt(() => catalog.list({ pageSize: 1, statusTimestampAfter }));
    assert.equal(r.err?.tag, 'invalid-input', statusTimestampAfter);
    assert.match(r.err.val, /^invalid timestamp .* \(RFC 3339 expected\)/);
  }
  // A token the Rust store made (shared/format/src/query.rs) continues the walk as well.
  const rustToken = b64('[null,"a"]');
  store.save(task('b'), any);
  assert.deepEqual(catalog.list({ pageSize: 5, pageToken: rustToken }).tasks, [task('b')]);
});

test('files that are not Tasks: corrupt, never a miss; side files are not listed', async () => {
  const dir = tempDir();
  const { store, catalog } = await openInstance(dir);
  store.save(task('ok'), any);
  assert.deepEqual(catalog.list({ pageSize: 0 }).tasks, [task('ok')], 'records and locks are hidden');
  writeFileSync(join(dir, 'a.json'), task('b'));
  symlinkSync('ok.json', join(dir, 'link.json'));
  for (const [id, reason] of [
    ['a', /^corrupt task file \/a\.json: holds task "b", not "a"$/],
    ['link', /^corrupt task file \/link\.json: is a symbolic link, which is never followed$/],
  ]) {
    const r = attempt(() => store.get(id));
    assert.equal(r.err?.tag, 'corrupt', id);
    assert.match(r.err.val, reason);
  }
  const r = attempt(() => catalog.list({ pageSize: 0 }));
  assert.equal(r.err?.tag, 'corrupt');
});

test('configure: durability and lock-lease-ms are checked; unknown names are ignored', async () => {
  const dir = tempDir();
  const { config, store } = await openInstance(dir);
  config.configure([['durability', 'relaxed'], ['lock-lease-ms', '10'], ['something', 'else']]);
  config.configure([['lock-lease-ms', '3600000'], ['durability', 'full']]);
  config.configure([['lock-lease-ms', '+250']]);
  for (const value of ['9', '3600001', '', '1.5', '-10', 'ten', ' 100']) {
    assert.throws(() => config.configure([['lock-lease-ms', value]]), /lock-lease-ms must be a whole number of milliseconds from 10 to 3600000/, value);
  }
  assert.throws(() => config.configure([['durability', 'fast']]), /durability must be full or relaxed/);
  assert.equal(store.save(task('c'), any), 1n);
  const r = attempt(() => store.save('{"id":""}', any));
  assert.deepEqual(r, { err: { tag: 'invalid-input', val: 'task "id" is an empty string' } });
});

/** Runs `count` writer processes at once; each line they print of their saves, parsed. */
async function race(dir, count, id, saves, condition) {
  const script = join(here, '../test-support/race-writer.mjs');
  const children = [];
  const loaded = [];
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, [script, dir, id, String(saves), condition], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let ready;
    loaded.push(new Promise((resolve) => (ready = resolve)));
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) ready();
    });
    children.push(
      new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('close', (code) => {
          ready(); // one that exits before it is ready fails below
          code === 0 ? resolve(out) : reject(new Error(`writer exited with ${code}`));
        });
      }),
    );
  }
  // Every writer loaded (its first line printed), then all started together.
  await Promise.all(loaded);
  writeFileSync(join(dir, 'go'), '');
  const outputs = await Promise.all(children);
  const lines = outputs.flatMap((out) => out.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line)));
  assert.equal(lines.filter((line) => line.ready).length, count, 'every writer was ready before the start');
  return lines.filter((line) => !line.ready);
}

test('writers in separate processes: one conditional save per version wins, no save is lost', async () => {
  const dir = tempDir();
  const { store } = await openInstance(dir);
  assert.equal(store.save(task('r'), any), 1n);
  const results = await race(dir, 4, 'r', 1, '1');
  const won = results.filter((r) => 'ok' in r);
  assert.equal(won.length, 1, JSON.stringify(results));
  assert.equal(won[0].ok, '2');
  for (const r of results.filter((x) => 'err' in x)) {
    assert.equal(r.err, 'conflict', JSON.stringify(r));
    assert.equal(r.current, '2');
  }
  rmSync(join(dir, 'go'));
  const plain = await race(dir, 3, 'r', 10, 'any');
  assert.ok(plain.every((r) => 'ok' in r), JSON.stringify(plain));
  const versions = plain.map((r) => Number(r.ok)).sort((a, b) => a - b);
  assert.deepEqual(versions, Array.from({ length: 30 }, (_, i) => i + 3), 'every save got its own version');
  assert.equal(store.get('r').version, 32n);
  rmSync(join(dir, 'go'));
  assert.deepEqual(names(dir), ['.~r.v', 'r.json'], 'no temp files or locks left');
});
