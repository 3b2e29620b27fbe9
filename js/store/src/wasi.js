// The file operations the store's files share, over `wasi:filesystem` in the directory the host
// preopens at `/`: the directory handle, checked reads of regular files, temp files written and
// renamed into place, directory flushes and listings, and the errors they raise. Names are
// paths relative to that directory (`t1.json`, `.push/t1/c1.json`); messages show them from `/`,
// as the Rust store does. The Task files (`dir.js`) and the push configs (`push.js`) are built
// on these.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { StoreError, TEMP_PREFIX, decodeUtf8 } from './format.js';

/** The granted directory, as the guest sees it (`/`); used in messages, as the Rust store does. */
export const ROOT = '/';
const READ_CHUNK = 64n * 1024n;
export const FOLLOW = { symlinkFollow: true };
export const NO_FOLLOW = { symlinkFollow: false };
const dispose = Symbol.dispose || Symbol.for('dispose');

/** The WASI error code (`no-entry`, `exist`, `access`, ...) of a failed import call. */
export function errorCode(e) {
  if (e !== null && typeof e === 'object' && 'payload' in e) return e.payload;
  if (typeof e === 'string') return e;
  return null;
}

/** An `io` error naming the file; its WASI error code (or `null`) is kept in `code`. */
export function ioError(op, name, e) {
  const code = errorCode(e);
  const why = code === null ? String(e) : `${code}`;
  const err = new StoreError('io', `cannot ${op} ${ROOT}${name}: ${why}`);
  err.code = code;
  return err;
}

export function close(resource) {
  if (resource && typeof resource[dispose] === 'function') resource[dispose]();
}

let rootDescriptor = null;

/** The preopened directory (guest path `/`), looked up once per instance. */
export function root() {
  if (rootDescriptor === null) {
    const dirs = getDirectories();
    const found = dirs.find(([, path]) => path === ROOT) ?? dirs[0];
    if (!found) throw new StoreError('io', 'the host granted no directory (no preopen at /)');
    rootDescriptor = found[0];
    for (const [descriptor] of dirs) if (descriptor !== rootDescriptor) close(descriptor);
  }
  return rootDescriptor;
}

/**
 * A file's identity as version records remember it: `{ size, mtimeNs }` (BigInts) from a WASI
 * `descriptor-stat`. The modification time is nanoseconds since the Unix epoch, exactly what
 * Rust's `Metadata::modified()` gives inside a component and natively; a file system without
 * one gives 0.
 */
export function stampOf(stat) {
  const t = stat.dataModificationTimestamp;
  const mtimeNs = t ? BigInt(t.seconds) * 1_000_000_000n + BigInt(t.nanoseconds) : 0n;
  return { size: BigInt(stat.size), mtimeNs };
}

function notRegular(type) {
  if (type === 'symbolic-link') return 'is a symbolic link, which is never followed';
  if (type === 'directory') return 'is a directory';
  return 'is not a regular file (a FIFO, a socket or a device)';
}

/** Reads at most `limit` bytes (or to the end) of an open file. */
export function readBytes(file, limit) {
  const chunks = [];
  let total = 0;
  for (;;) {
    const want = BigInt(Math.min(Number(READ_CHUNK), limit - total));
    if (want <= 0n) break;
    const [chunk, eof] = file.read(want, BigInt(total));
    if (chunk.length > 0) {
      chunks.push(chunk);
      total += chunk.length;
    }
    if (eof || chunk.length === 0) break;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

/**
 * The regular file `name` as text: `{ text, stat }` (the stat of the file read), `null` if it
 * does not exist; `corrupt(name, reason)` is thrown if it is not a regular file (looked at before
 * opening it, so a link is never followed and a FIFO never blocks), is larger than `limit` bytes
 * (`tooLarge(size)` says so) or is not UTF-8.
 */
export function readCapped(name, limit, { corrupt, tooLarge }) {
  let kind;
  try {
    kind = root().statAt(NO_FOLLOW, name).type;
  } catch (e) {
    if (errorCode(e) === 'no-entry') return null;
    throw ioError('read', name, e);
  }
  if (kind !== 'regular-file') throw corrupt(name, notRegular(kind));
  let file;
  try {
    file = root().openAt(NO_FOLLOW, name, {}, { read: true });
  } catch (e) {
    if (errorCode(e) === 'no-entry') return null;
    throw ioError('read', name, e);
  }
  let bytes;
  let stat;
  try {
    stat = file.stat();
    if (stat.type !== 'regular-file') throw corrupt(name, notRegular(stat.type));
    if (BigInt(stat.size) > BigInt(limit)) throw corrupt(name, tooLarge(stat.size));
    // At most one byte past the cap, in case the file grew since it was looked at.
    bytes = readBytes(file, limit + 1);
  } catch (e) {
    if (e instanceof StoreError) throw e;
    throw ioError('read', name, e);
  } finally {
    close(file);
  }
  if (bytes.length > limit) throw corrupt(name, tooLarge(bytes.length));
  const text = decodeUtf8(bytes);
  if (text === null) throw corrupt(name, 'not UTF-8');
  return { text, stat };
}

/** Flushes the directory `path` (default: the root), so a rename or unlink in it survives power loss. */
export function syncDir(path = '.') {
  let dir;
  try {
    dir = root().openAt(FOLLOW, path, { directory: true }, { read: true });
    dir.sync();
  } catch (e) {
    throw ioError('sync directory', path === '.' ? '' : path, e);
  } finally {
    close(dir);
  }
}

/** 32 lower-case hex digits from `wasi:random` (via `crypto.getRandomValues`). */
export function randomHex() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** `name` in the directory `dir` (`''`: the root). */
export function inDir(dir, name) {
  return dir === '' ? name : `${dir}/${name}`;
}

/**
 * A new temp file in the directory `dir` (`''`: the root), created exclusively
 * (`O_CREAT | O_EXCL`) under a random hidden name.
 */
function createTemp(dir) {
  let last = null;
  for (let attempt = 0; attempt < 16; attempt++) {
    const name = inDir(dir, TEMP_PREFIX + randomHex());
    try {
      const file = root().openAt(FOLLOW, name, { create: true, exclusive: true }, { write: true });
      return { name, file };
    } catch (e) {
      if (errorCode(e) !== 'exist') throw ioError('create temp file', name, e);
      last = ioError('create temp file', name, e);
    }
  }
  throw last;
}

export function removeQuietly(name) {
  try {
    root().unlinkFileAt(name);
  } catch {
    // Best effort: the temp file is hidden and swept later if this fails too.
  }
}

export function writeAll(file, bytes, name) {
  let offset = 0;
  while (offset < bytes.length) {
    const written = Number(file.write(bytes.subarray(offset), BigInt(offset)));
    if (written <= 0) throw new StoreError('io', `cannot write ${ROOT}${name}: short write`);
    offset += written;
  }
}

/**
 * Writes `bytes` to a fresh temp file in the directory `dir` (`''`: the root), flushed
 * (`sync-data`) under full durability: its name and stamp (a `stat` of the written file). On
 * failure the temp file is removed. An error creating it keeps its WASI code in `cause` (a
 * directory removed meanwhile shows as `no-entry`).
 */
export function writeTemp(bytes, durable, dir = '') {
  const temp = createTemp(dir);
  try {
    writeAll(temp.file, bytes, temp.name);
    if (durable) temp.file.syncData();
    const stamp = stampOf(temp.file.stat());
    close(temp.file);
    return { name: temp.name, stamp };
  } catch (e) {
    close(temp.file);
    removeQuietly(temp.name);
    throw e instanceof StoreError ? e : ioError('write', temp.name, e);
  }
}

export function renameInto(from, to) {
  try {
    root().renameAt(from, root(), to);
  } catch (e) {
    throw ioError('rename into', to, e);
  }
}

/** Milliseconds on the wall clock, to age files by their modification time. */
export function wallNowMs() {
  return Date.now();
}

export function mtimeMs(stat) {
  const t = stat.dataModificationTimestamp;
  return t ? Number(t.seconds) * 1000 + t.nanoseconds / 1e6 : null;
}

/**
 * Every entry of the directory `path` (default: the root) as `{ name, type }`; `null` if it does
 * not exist. Read through a descriptor opened on the path rather than the preopen itself, as
 * wasi-libc's `opendir` does: preview2-shim (the store in Node) cannot list a preopen descriptor.
 */
export function dirEntries(path = '.') {
  let dir;
  let stream;
  const entries = [];
  try {
    dir = root().openAt(NO_FOLLOW, path, { directory: true }, { read: true });
    stream = dir.readDirectory();
    for (;;) {
      const entry = stream.readDirectoryEntry();
      if (entry === undefined || entry === null) break;
      entries.push({ name: entry.name, type: entry.type });
    }
  } catch (e) {
    if (errorCode(e) === 'no-entry') return null;
    throw ioError('list', path === '.' ? '' : path, e);
  } finally {
    close(stream);
    close(dir);
  }
  return entries;
}

/**
 * Removes `name` if it is a temp file (`.tmp-…`) last changed at least `olderThanMs` before
 * `nowMs`: a leftover of a writer that crashed before its rename (a younger one may belong to a
 * live writer). Errors are ignored: it is gone already, or not ours to remove.
 */
export function removeIfStaleTemp(name, nowMs, olderThanMs) {
  const base = name.slice(name.lastIndexOf('/') + 1);
  if (!base.startsWith(TEMP_PREFIX)) return;
  try {
    const modified = mtimeMs(root().statAt(NO_FOLLOW, name));
    if (modified !== null && nowMs - modified >= olderThanMs) root().unlinkFileAt(name);
  } catch {
    // Gone already, or not ours to remove.
  }
}

/** Every entry name in the root directory. */
export function entryNames() {
  return (dirEntries() ?? []).map((entry) => entry.name);
}
