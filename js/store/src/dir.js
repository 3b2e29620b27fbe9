// A directory of Task files over `wasi:filesystem`: atomic writes, verified reads, crash
// clean-up. The JavaScript twin of `crates/format/src/dir.rs`; see docs/on-disk-format.md.
//
// Every Task lives in the preopened directory, never in this instance's memory: the host runs
// several instances of the component at once, and other processes may share the directory.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import {
  StoreError,
  TEMP_PREFIX,
  STALE_TEMP_AGE_MS,
  Query,
  decodeFileName,
  decodeUtf8,
  encodeId,
  isTaskFileName,
  parseTask,
  utf8,
} from './format.js';

/** The granted directory, as the guest sees it (`/`); used in messages, as the Rust store does. */
const ROOT = '/';
const READ_CHUNK = 64n * 1024n;
const FOLLOW = { symlinkFollow: true };
const dispose = Symbol.dispose || Symbol.for('dispose');

/** The WASI error code (`no-entry`, `exist`, `access`, ...) of a failed import call. */
function errorCode(e) {
  if (e !== null && typeof e === 'object' && 'payload' in e) return e.payload;
  if (typeof e === 'string') return e;
  return null;
}

function ioError(op, name, e) {
  const code = errorCode(e);
  const why = code === null ? String(e) : `${code}`;
  return new StoreError('io', `cannot ${op} ${ROOT}${name}: ${why}`);
}

function close(resource) {
  if (resource && typeof resource[dispose] === 'function') resource[dispose]();
}

let rootDescriptor = null;

/** The preopened directory (guest path `/`), looked up once per instance. */
function root() {
  if (rootDescriptor === null) {
    const dirs = getDirectories();
    const found = dirs.find(([, path]) => path === ROOT) ?? dirs[0];
    if (!found) throw new StoreError('io', 'the host granted no directory (no preopen at /)');
    rootDescriptor = found[0];
    for (const [descriptor] of dirs) if (descriptor !== rootDescriptor) close(descriptor);
  }
  return rootDescriptor;
}

/** The file's text: `null` if it does not exist; `corrupt` if it is not UTF-8. */
function readText(name) {
  let file;
  try {
    file = root().openAt(FOLLOW, name, {}, { read: true });
  } catch (e) {
    if (errorCode(e) === 'no-entry') return null;
    throw ioError('read', name, e);
  }
  const chunks = [];
  let total = 0;
  try {
    for (;;) {
      const [chunk, eof] = file.read(READ_CHUNK, BigInt(total));
      if (chunk.length > 0) {
        chunks.push(chunk);
        total += chunk.length;
      }
      if (eof || chunk.length === 0) break;
    }
  } catch (e) {
    throw ioError('read', name, e);
  } finally {
    close(file);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  const text = decodeUtf8(bytes);
  if (text === null) throw corrupt(name, 'not UTF-8');
  return text;
}

function corrupt(name, reason) {
  return new StoreError('corrupt', `corrupt task file ${ROOT}${name}: ${reason}`);
}

/** Flushes the directory itself, so a rename or unlink survives power loss. */
function syncDir() {
  let dir;
  try {
    dir = root().openAt(FOLLOW, '.', { directory: true }, { read: true });
    dir.sync();
  } catch (e) {
    throw ioError('sync directory', '', e);
  } finally {
    close(dir);
  }
}

/** 32 lower-case hex digits from `wasi:random` (via `crypto.getRandomValues`). */
function randomHex() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** A new temp file, created exclusively (`O_CREAT | O_EXCL`) under a random hidden name. */
function createTemp() {
  let last = null;
  for (let attempt = 0; attempt < 16; attempt++) {
    const name = TEMP_PREFIX + randomHex();
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

function removeQuietly(name) {
  try {
    root().unlinkFileAt(name);
  } catch {
    // Best effort: the temp file is hidden and swept later if this fails too.
  }
}

/**
 * Atomically replaces `name` with `bytes`: a unique temp file, written, flushed (full
 * durability), renamed over `name`, then the directory flushed. On failure the temp file is
 * removed and `name` is untouched.
 */
function writeAtomically(name, bytes, durable) {
  const temp = createTemp();
  try {
    let offset = 0;
    while (offset < bytes.length) {
      const written = Number(temp.file.write(bytes.subarray(offset), BigInt(offset)));
      if (written <= 0) throw new StoreError('io', `cannot write ${ROOT}${temp.name}: short write`);
      offset += written;
    }
    if (durable) temp.file.syncData();
  } catch (e) {
    close(temp.file);
    removeQuietly(temp.name);
    throw e instanceof StoreError ? e : ioError('write', temp.name, e);
  }
  close(temp.file);
  try {
    root().renameAt(temp.name, root(), name);
  } catch (e) {
    removeQuietly(temp.name);
    throw ioError('rename into', name, e);
  }
  if (durable) syncDir();
}

/** Every entry name in the directory. */
function entryNames() {
  let stream;
  const names = [];
  try {
    stream = root().readDirectory();
    for (;;) {
      const entry = stream.readDirectoryEntry();
      if (entry === undefined || entry === null) break;
      names.push(entry.name);
    }
  } catch (e) {
    throw ioError('list', '', e);
  } finally {
    close(stream);
  }
  return names;
}

let swept = false;

/**
 * Once per instance: removes temp files left by writers that crashed before their rename, those
 * last changed more than an hour ago. Younger ones may belong to a live writer and stay. Errors
 * are ignored: this is housekeeping, never a reason to fail a call.
 */
function sweepOnce() {
  if (swept) return;
  swept = true;
  try {
    const now = Date.now();
    for (const name of entryNames()) {
      if (!name.startsWith(TEMP_PREFIX)) continue;
      try {
        const stat = root().statAt({ symlinkFollow: false }, name);
        const modified = stat.dataModificationTimestamp;
        if (!modified) continue;
        const ms = Number(modified.seconds) * 1000 + modified.nanoseconds / 1e6;
        if (now - ms >= STALE_TEMP_AGE_MS) root().unlinkFileAt(name);
      } catch {
        // Gone already, or not ours to remove.
      }
    }
  } catch {
    // An unreadable directory shows up as an error of the call itself.
  }
}

/** The store over the preopened directory; `durable()` says whether to flush (full durability). */
export class DirStore {
  constructor(durable) {
    this.durable = durable;
    sweepOnce();
  }

  /** The Task with this id as JSON text, or `null`; a file holding anything else is corrupt. */
  getText(id) {
    const name = encodeId(id);
    const text = readText(name);
    if (text === null) return null;
    let storedId;
    try {
      storedId = parseTask(text).id;
    } catch (e) {
      throw corrupt(name, e.message);
    }
    if (storedId !== id) {
      throw corrupt(name, `holds task ${JSON.stringify(storedId)}, not ${JSON.stringify(id)}`);
    }
    return text;
  }

  /** Saves Task text, checked first and then written exactly as given. */
  saveText(text) {
    let id;
    try {
      id = parseTask(text).id;
    } catch (e) {
      throw new StoreError('invalid-input', e.message);
    }
    writeAtomically(encodeId(id), utf8(text), this.durable);
  }

  /** One page of the Tasks matching the WIT `list-query`: `{ tasks, nextPageToken }`. */
  list(witQuery) {
    const query = new Query(witQuery);
    const matching = [];
    for (const name of entryNames()) {
      if (!isTaskFileName(name)) continue;
      // A plain name says its id: skip files outside the page without reading them.
      const plainId = decodeFileName(name);
      if (plainId !== null && !query.afterToken(plainId)) continue;
      const text = readText(name);
      if (text === null) continue; // deleted meanwhile
      let parsed;
      try {
        parsed = parseTask(text);
      } catch (e) {
        throw corrupt(name, e.message);
      }
      if (encodeId(parsed.id) !== name) {
        throw corrupt(name, `holds task ${JSON.stringify(parsed.id)}, which belongs in another file`);
      }
      if (query.matches(parsed.task) && query.afterToken(parsed.id)) {
        matching.push([parsed.id, text]);
      }
    }
    const { items, next } = query.paginate(matching);
    return { tasks: items, nextPageToken: next ?? undefined };
  }

  /** Removes the Task with this id: `true` if there was one. */
  delete(id) {
    const name = encodeId(id);
    try {
      root().unlinkFileAt(name);
    } catch (e) {
      if (errorCode(e) === 'no-entry') return false;
      throw ioError('delete', name, e);
    }
    if (this.durable) syncDir();
    return true;
  }
}
