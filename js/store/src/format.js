// The toolnexus on-disk Task format (docs/on-disk-format.md), in plain JavaScript.
//
// Everything here is pure: no WASI, no Node APIs beyond TextEncoder/TextDecoder, so the same
// module runs inside the component (StarlingMonkey) and under `node --test` (test/format.test.mjs).
// It mirrors the Rust reference implementation in `crates/format/src/{id,task,query,state}.rs` rule for rule.

/** The extension of every Task file. */
export const EXTENSION = '.json';
/** The longest file name most file systems accept (ext4, XFS, APFS, NTFS), in bytes. */
export const MAX_FILE_NAME = 255;
/** Length of the readable prefix kept in a hashed name: prefix + "~" + 64 hex + ".json" <= 255. */
const HASHED_PREFIX_MAX = MAX_FILE_NAME - EXTENSION.length - 1 - 64;
/** Prefix of every temp file name. Hidden, so never mistaken for a Task file. */
export const TEMP_PREFIX = '.tmp-';
/** A temp file older than this (milliseconds) is a crashed writer's leftover. */
export const STALE_TEMP_AGE_MS = 60 * 60 * 1000;
/** Page size when the query says 0, and the most a page ever holds. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 1000;

const HEX_UPPER = '0123456789ABCDEF';
const utf8Encoder = new TextEncoder();

/** An error with a WIT `store-error` case: `invalid-input`, `corrupt`, `io` or `other`. */
export class StoreError extends Error {
  constructor(tag, message) {
    super(message);
    this.tag = tag;
  }
}

/** The UTF-8 bytes of a string. */
export function utf8(text) {
  return utf8Encoder.encode(text);
}

/**
 * Decodes UTF-8 strictly: `null` if the bytes are not UTF-8. A byte-order mark is kept (and then
 * fails JSON parsing), exactly as the Rust stores treat it.
 */
export function decodeUtf8(bytes) {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

function isPlain(byte) {
  return (
    (byte >= 0x30 && byte <= 0x39) || // 0-9
    (byte >= 0x41 && byte <= 0x5a) || // A-Z
    (byte >= 0x61 && byte <= 0x7a) || // a-z
    byte === 0x2d || // -
    byte === 0x5f || // _
    byte === 0x2e // .
  );
}

/** Whether a string is valid Unicode (no lone surrogates), so it has a UTF-8 encoding. */
export function isWellFormed(text) {
  if (typeof text.isWellFormed === 'function') return text.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** The file name (with `.json`) that holds the Task with this id. */
export function encodeId(id) {
  if (id === '') throw new StoreError('invalid-input', 'task id is empty');
  const bytes = utf8(id);
  let name = '';
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (isPlain(byte) && !(i === 0 && byte === 0x2e)) {
      name += String.fromCharCode(byte);
    } else {
      name += '%' + HEX_UPPER[byte >> 4] + HEX_UPPER[byte & 0xf];
    }
  }
  if (name.length + EXTENSION.length > MAX_FILE_NAME) {
    let cut = HASHED_PREFIX_MAX;
    // Never split a `%XX` escape: back up to the start of the escape the cut falls in.
    const pos = name.slice(cut - 2, cut).lastIndexOf('%');
    if (pos >= 0) cut = cut - 2 + pos;
    name = name.slice(0, cut) + '~' + sha256Hex(bytes);
  }
  return name + EXTENSION;
}

/**
 * The id a plain (not hashed) Task file name encodes, or `null` for anything else: temp files,
 * hashed names, files that are not `.json`, and names that `encodeId` would not produce.
 */
export function decodeFileName(name) {
  if (!name.endsWith(EXTENSION)) return null;
  const stem = name.slice(0, -EXTENSION.length);
  if (stem === '' || stem.startsWith('.') || stem.includes('~')) return null;
  const out = [];
  for (let i = 0; i < stem.length; ) {
    const c = stem.charCodeAt(i);
    if (c === 0x25) {
      const hex = stem.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return null;
      out.push(parseInt(hex, 16));
      i += 3;
    } else if (c < 0x80 && isPlain(c)) {
      out.push(c);
      i += 1;
    } else {
      return null;
    }
  }
  const id = decodeUtf8(Uint8Array.from(out));
  if (id === null || id === '') return null;
  // Only the canonical spelling decodes, so that decode is the exact inverse of encode.
  return encodeId(id) === name ? id : null;
}

/** Whether a directory entry is a Task file (as opposed to a temp file or something foreign). */
export function isTaskFileName(name) {
  return name.length > EXTENSION.length && name.endsWith(EXTENSION) && !name.startsWith('.');
}

/** Compares two strings by the bytes of their UTF-8 encodings (= by code points). */
export function compareIds(a, b) {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i);
    const cb = b.codePointAt(j);
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return 0;
}

/** What kind of JSON value this is, for messages. */
export function jsonKind(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'boolean':
      return 'boolean';
    case 'number':
      return 'number';
    case 'string':
      return 'string';
    default:
      return 'object';
  }
}

/**
 * Parses Task text: `{ task, id }`, or throws a plain `Error` whose message says what is wrong
 * (the caller decides whose fault it is). The text itself is what gets stored, never a
 * re-serialization, so numbers such as 9007199254740993 and -0.0 survive byte for byte.
 */
export function parseTask(text) {
  let task;
  try {
    task = JSON.parse(text);
  } catch (e) {
    throw new Error(`task is not valid JSON: ${e && e.message ? e.message : e}`);
  }
  const kind = jsonKind(task);
  if (kind !== 'object') throw new Error(`task must be a JSON object, found ${kind}`);
  if (!Object.prototype.hasOwnProperty.call(task, 'id')) throw new Error('task has no "id" member');
  const id = task.id;
  if (typeof id !== 'string') throw new Error(`task "id" must be a string, found ${jsonKind(id)}`);
  if (id === '') throw new Error('task "id" is an empty string');
  if (!isWellFormed(id)) throw new Error('task "id" is not valid Unicode (a lone surrogate)');
  return { task, id };
}

/**
 * A Task state in one spelling: `TASK_STATE_INPUT_REQUIRED` and `input-required` agree, and so do
 * `canceled`, `cancelled` and `TASK_STATE_CANCELLED` (the rules of `crates/format/src/state.rs`).
 */
export function normalizeState(state) {
  const bare = state.startsWith('TASK_STATE_') ? state.slice('TASK_STATE_'.length) : state;
  const folded = bare.replace(/[A-Z]/g, (c) => c.toLowerCase()).replace(/_/g, '-');
  return folded === 'cancelled' ? 'canceled' : folded;
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A WIT `list-query` with its defaults applied. */
export class Query {
  constructor({ contextId, state, pageSize, pageToken } = {}) {
    this.contextId = contextId ?? null;
    this.state = state ?? null;
    this.pageToken = pageToken ?? null;
    const size = Number(pageSize ?? 0);
    this.limit = size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
  }

  hasFilters() {
    return this.contextId !== null || this.state !== null;
  }

  /** Whether `id` comes after the page token (always, on the first page). */
  afterToken(id) {
    return this.pageToken === null || compareIds(id, this.pageToken) > 0;
  }

  matches(task) {
    if (this.contextId !== null && task.contextId !== this.contextId) return false;
    if (this.state !== null) {
      const state = isObject(task.status) ? task.status.state : undefined;
      if (typeof state !== 'string') return false;
      if (normalizeState(state) !== normalizeState(this.state)) return false;
    }
    return true;
  }

  /** Sorts `[id, item]` pairs by id and cuts one page: `{ items, next }`. */
  paginate(matching) {
    matching.sort((a, b) => compareIds(a[0], b[0]));
    const next = matching.length > this.limit ? matching[this.limit - 1][0] : null;
    return { items: matching.slice(0, this.limit).map(([, item]) => item), next };
  }
}

// --- SHA-256 (FIPS 180-4), for hashed file names. Small inputs only: ids are rarely > 1 MB. ---

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** The SHA-256 of `bytes` as 64 lower-case hex digits. */
export function sha256Hex(bytes) {
  const bitLength = bytes.length * 8;
  const padded = new Uint8Array((((bytes.length + 9 + 63) >> 6) << 6));
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  // Length in bits as a 64-bit big-endian integer (inputs stay far below 2^53 bits).
  view.setUint32(padded.length - 8, Math.floor(bitLength / 0x100000000));
  view.setUint32(padded.length - 4, bitLength >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let block = 0; block < padded.length; block += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(block + t * 4);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + s1 + ch + K[t] + w[t]) >>> 0;
      const s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  let hex = '';
  for (const word of h) hex += word.toString(16).padStart(8, '0');
  return hex;
}
