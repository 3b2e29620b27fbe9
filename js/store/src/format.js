// The toolnexus on-disk Task format (docs/on-disk-format.md), in plain JavaScript.
//
// Everything here is pure: no WASI, no Node APIs beyond TextEncoder/TextDecoder, so the same
// module runs inside the component (StarlingMonkey) and under `node --test` (test/format.test.mjs).
// It mirrors the Rust reference implementation in `shared/format/src/{id,task,query,state}.rs` rule for rule.

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
/** The largest Task file read; a larger one is corrupt, never read into memory. */
export const MAX_TASK_FILE_BYTES = 64 * 1024 * 1024;
/**
 * How long (milliseconds) another writer must see a writer's lock on one Task unchanged, by its
 * own monotonic clock, before it may break it; `configure(lock-lease-ms)` changes it. A writer
 * gives up a save after half of it.
 */
export const DEFAULT_LOCK_LEASE_MS = 4_000;
export const MIN_LOCK_LEASE_MS = 10;
export const MAX_LOCK_LEASE_MS = 3_600_000;
/** Page size when the query says 0, and the most a page ever holds. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 1000;

const HEX_UPPER = '0123456789ABCDEF';
const utf8Encoder = new TextEncoder();

/**
 * An error with a WIT `store-error` case: `invalid-input`, `corrupt`, `io`, `conflict` or
 * `other`. A `conflict` also carries `current`, the stored version (a BigInt, or `null` when
 * there is no Task).
 */
export class StoreError extends Error {
  constructor(tag, message, current = null) {
    super(message);
    this.tag = tag;
    this.current = current;
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
 * `canceled`, `cancelled` and `TASK_STATE_CANCELLED` (the rules of `shared/format/src/state.rs`).
 */
export function normalizeState(state) {
  const bare = state.startsWith('TASK_STATE_') ? state.slice('TASK_STATE_'.length) : state;
  const folded = bare.replace(/[A-Z]/g, (c) => c.toLowerCase()).replace(/_/g, '-');
  return folded === 'cancelled' ? 'canceled' : folded;
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// --- Versions (shared/format/src/dir/: `Record`, `Stamp`, `side_names`) ---

/** The largest u64, where a version counter stops (saturates). */
export const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
/** A version record longer than this is not read past it (and so does not parse). */
export const MAX_RECORD_BYTES = 512;

/** The names beside the Task file `<stem>.json`: its version record and its lock. */
export function sideNames(taskFile) {
  const stem = taskFile.endsWith(EXTENSION) ? taskFile.slice(0, -EXTENSION.length) : taskFile;
  return { record: `.~${stem}.v`, lock: `.~${stem}.l` };
}

/**
 * The length of every version record this store writes: one line of JSON padded with spaces.
 * A record of exactly this length is overwritten in place by the next save; any other is
 * replaced by a rename.
 */
export const RECORD_LEN = 256;

/**
 * The check of a record's fields: the first 8 bytes of the SHA-256 of
 * `"<version> <size> <mtime_ns>"` (and, in format 2 with a previous file,
 * `" <prev_size> <prev_mtime_ns>"`), in hex. A record torn by a concurrent in-place write fails
 * it.
 */
export function recordCheck({ version, size, mtimeNs, prev = null }) {
  const fields = prev === null ? `${version} ${size} ${mtimeNs}` : `${version} ${size} ${mtimeNs} ${prev.size} ${prev.mtimeNs}`;
  return sha256Hex(utf8(fields)).slice(0, 16);
}

/**
 * The text of a version record (format 2):
 * `{"format":2,"version":N,"size":S,"mtime_ns":M,"prev_size":PS,"prev_mtime_ns":PM,"check":"C"}`
 * (the `prev_` members only when the save replaced a Task file), padded with spaces to
 * [`RECORD_LEN`] bytes including the final newline.
 */
export function recordText({ version, size, mtimeNs, prev = null }) {
  const prevMembers = prev === null ? '' : `,"prev_size":${prev.size},"prev_mtime_ns":${prev.mtimeNs}`;
  const line = `{"format":2,"version":${version},"size":${size},"mtime_ns":${mtimeNs}${prevMembers},"check":"${recordCheck({ version, size, mtimeNs, prev })}"}`;
  // Always shorter: the longest fields there are make 238 bytes.
  return line + ' '.repeat(Math.max(0, RECORD_LEN - 1 - line.length)) + '\n';
}

/**
 * Parses a version record as the Rust store does (serde_json, any key order, the last of
 * duplicate keys wins, other members ignored): `{ version, size, mtimeNs, prev }` as BigInts
 * (`prev`: `{ size, mtimeNs }` or `null`), or `null` for anything that is not a readable record
 * of format 1 or 2, or whose `check` fails.
 */
export function parseRecord(text) {
  let value;
  try {
    value = parseJsonRawNumbers(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof RawNumber) {
    return null;
  }
  const u64 = (v) => {
    if (!(v instanceof RawNumber) || !/^(0|[1-9][0-9]*)$/.test(v.raw)) return null;
    const n = BigInt(v.raw);
    return n <= U64_MAX ? n : null;
  };
  const i64 = (v) => {
    if (!(v instanceof RawNumber) || !/^-?(0|[1-9][0-9]*)$/.test(v.raw)) return null;
    const n = BigInt(v.raw);
    return n >= I64_MIN && n <= I64_MAX ? n : null;
  };
  const format = u64(value.get('format'));
  if (format !== 1n && format !== 2n) return null;
  const version = u64(value.get('version'));
  const size = u64(value.get('size'));
  const mtimeNs = i64(value.get('mtime_ns'));
  if (version === null || size === null || mtimeNs === null) return null;
  let prev = null;
  if (value.has('prev_size') || value.has('prev_mtime_ns')) {
    const prevSize = u64(value.get('prev_size'));
    const prevMtimeNs = i64(value.get('prev_mtime_ns'));
    if (format !== 2n || prevSize === null || prevMtimeNs === null) return null;
    prev = { size: prevSize, mtimeNs: prevMtimeNs };
  }
  const record = { version, size, mtimeNs, prev };
  // Format-1 records written before checks (always by rename, never torn) have none.
  if (!value.has('check')) return format === 1n ? record : null;
  if (value.get('check') !== recordCheck(record)) return null;
  return record;
}

/**
 * The version of a Task file with this stamp (`{ size, mtimeNs }`), given the record (if any)
 * read before it: the record's version if it describes this file; one less if it is the file
 * the record's save replaced (that save has not renamed its Task file into place yet); one
 * past it if it is another (a writer crashed before writing its record, or one that knows
 * nothing of versions wrote it); 1 if there is no record.
 */
export function versionOf(record, stamp) {
  if (record === null || record === undefined) return 1n;
  if (record.size === stamp.size && record.mtimeNs === stamp.mtimeNs) return record.version;
  const prev = record.prev ?? null;
  if (prev !== null && prev.size === stamp.size && prev.mtimeNs === stamp.mtimeNs) {
    return record.version > 1n ? record.version - 1n : 1n;
  }
  return record.version < U64_MAX ? record.version + 1n : U64_MAX;
}

/** A JSON number kept as its text, so u64 and i64 values survive exactly. */
class RawNumber {
  constructor(raw) {
    this.raw = raw;
  }
}

/**
 * A strict JSON parser (RFC 8259) for small texts whose numbers must stay exact: objects become
 * `Map`s (the last duplicate wins), numbers `RawNumber`s. Whitespace may surround the value.
 */
function parseJsonRawNumbers(text) {
  let i = 0;
  const fail = () => {
    throw new Error(`invalid JSON at ${i}`);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const string = () => {
    // The text between the quotes, escapes and all, is valid JSON string text: let JSON.parse
    // decode it after checking where it ends.
    const start = i;
    i++;
    for (;;) {
      if (i >= text.length) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) fail();
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail();
          i += 6;
        } else if ('"\\/bfnrt'.includes(e) && e !== undefined) {
          i += 2;
        } else {
          fail();
        }
      } else {
        i++;
      }
    }
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const value = (depth) => {
    if (depth > 32) fail();
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const map = new Map();
      ws();
      if (text[i] === '}') {
        i++;
        return map;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        const key = string();
        ws();
        if (text[i] !== ':') fail();
        i++;
        map.set(key, value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
        } else if (text[i] === '}') {
          i++;
          return map;
        } else {
          fail();
        }
      }
    }
    if (c === '[') {
      i++;
      const list = [];
      ws();
      if (text[i] === ']') {
        i++;
        return list;
      }
      for (;;) {
        list.push(value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
        } else if (text[i] === ']') {
          i++;
          return list;
        } else {
          fail();
        }
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '' || m[0] === '-') fail();
    i += m[0].length;
    return new RawNumber(m[0]);
  };
  const result = value(0);
  ws();
  if (i !== text.length) fail();
  return result;
}

// --- Timestamps (RFC 3339, as the Rust `time` crate parses them) ---

const RFC3339 =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})[\x00-\x7f]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))$/;

function isLeapYear(y) {
  return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
}

function daysInMonth(y, m) {
  return [31, isLeapYear(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
}

/** Days since 1970-01-01 of a proleptic Gregorian date (any year). */
function daysFromCivil(y, m, d) {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** The civil date of a day number from `daysFromCivil`. */
function civilFromDays(z) {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return { y: yoe + era * 400 + (m <= 2 ? 1 : 0), m, d };
}

/**
 * Parses RFC 3339 text to nanoseconds since the Unix epoch (a BigInt), with exactly the rules
 * of the `time` crate the Rust stores use: a 4-digit year, any one-byte date/time separator,
 * fraction digits past the ninth ignored, `Z` in either case, offsets up to ±23:59, a leap
 * second (`:60`) only as the last second of a month in UTC, read as 23:59:59.999999999.
 * Throws an `Error` saying what is wrong.
 */
export function parseTimestamp(text) {
  const m = typeof text === 'string' ? RFC3339.exec(text) : null;
  if (!m) throw new Error('not of the form YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)');
  const [year, month, day, hour, minute] = m.slice(1, 6).map(Number);
  let second = Number(m[6]);
  let nanos = m[7] ? Number(m[7].slice(0, 9).padEnd(9, '0')) : 0;
  let offset = 0;
  if (m[8]) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 23) throw new Error('offset hour out of range');
    if (om > 59) throw new Error('offset minute out of range');
    offset = (m[8] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const leap = second === 60;
  if (leap) {
    second = 59;
    nanos = 999_999_999;
  }
  if (month < 1 || month > 12) throw new Error('month out of range');
  if (day < 1 || day > daysInMonth(year, month)) throw new Error('day out of range');
  if (hour > 23) throw new Error('hour out of range');
  if (minute > 59) throw new Error('minute out of range');
  if (second > 59) throw new Error('second out of range');
  const secs = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
  if (leap) {
    const utcDay = Math.floor(secs / 86400);
    const inDay = secs - utcDay * 86400;
    const utc = civilFromDays(utcDay);
    if (inDay !== 86399 || utc.d !== daysInMonth(utc.y, utc.m)) {
      throw new Error('a leap second must be the last second of a month in UTC');
    }
  }
  return BigInt(secs) * 1_000_000_000n + BigInt(nanos);
}

/** The status timestamp (`status.timestamp`) of a parsed Task in nanoseconds, or `null`. */
export function timestampOf(task) {
  const status = task.status;
  if (!isObject(status) || typeof status.timestamp !== 'string') return null;
  try {
    return parseTimestamp(status.timestamp);
  } catch {
    return null;
  }
}

// --- Listing order and page tokens (shared/format/src/query.rs) ---

/** The longest page token decoded; anything longer is not one of ours. */
export const MAX_PAGE_TOKEN = 4096;

/**
 * Compares sort keys `{ timestamp, id }` in list order: the newest status timestamp first, ties
 * by id (by UTF-8 bytes), Tasks without a timestamp (`null`) after all others.
 */
export function compareKeys(a, b) {
  if (a.timestamp !== b.timestamp) {
    if (a.timestamp === null) return 1;
    if (b.timestamp === null) return -1;
    return a.timestamp > b.timestamp ? -1 : 1;
  }
  return compareIds(a.id, b.id);
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function base64UrlEncode(bytes) {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let k = 0; k < chars; k++) out += B64URL[(n >> (18 - 6 * k)) & 63];
  }
  return out;
}

/** Strict base64url without padding (non-zero trailing bits refused): bytes or `null`. */
function base64UrlDecode(text) {
  if (text.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((text.length * 6) / 8));
  let bits = 0;
  let acc = 0;
  let at = 0;
  for (let i = 0; i < text.length; i++) {
    const v = B64URL.indexOf(text[i]);
    if (v < 0) return null;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (acc >> bits) & 0xff;
    }
  }
  if ((acc & ((1 << bits) - 1)) !== 0) return null;
  return out;
}

/**
 * The opaque page token continuing after the key `{ timestamp, id }`: base64url (no padding) of
 * the JSON `[timestamp in ns as a decimal string, or null, id]`, the Rust stores' own token, so
 * a token from either store works with the other.
 */
export function encodePageToken(key) {
  const timestamp = key.timestamp === null ? null : key.timestamp.toString();
  return base64UrlEncode(utf8(JSON.stringify([timestamp, key.id])));
}

/** Reads a page token made by `encodePageToken`; anything else is `invalid-input`. */
export function decodePageToken(token) {
  const shown = JSON.stringify([...token].slice(0, 64).join(''));
  const bad = (reason) => new StoreError('invalid-input', `invalid page token: ${reason} (${shown})`);
  if (utf8(token).length > MAX_PAGE_TOKEN) throw bad('too long');
  const bytes = base64UrlDecode(token);
  if (bytes === null) throw bad('not base64url');
  const text = decodeUtf8(bytes);
  let value;
  try {
    if (text === null) throw new Error('not UTF-8');
    value = JSON.parse(text);
  } catch {
    throw bad('not a token of this store');
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !(value[0] === null || typeof value[0] === 'string') ||
    typeof value[1] !== 'string' ||
    !isWellFormed(value[1])
  ) {
    throw bad('not a token of this store');
  }
  let timestamp = null;
  if (value[0] !== null) {
    if (!/^[+-]?[0-9]+$/.test(value[0])) throw bad('bad timestamp');
    timestamp = BigInt(value[0]);
    if (timestamp < -(1n << 127n) || timestamp >= 1n << 127n) throw bad('bad timestamp');
  }
  if (value[1] === '') throw bad('no id');
  return { timestamp, id: value[1] };
}

/** A WIT `list-query` with its defaults applied; a malformed one throws `invalid-input`. */
export class Query {
  constructor({ contextId, state, statusTimestampAfter, pageSize, pageToken } = {}) {
    this.contextId = contextId ?? null;
    this.state = state ?? null;
    this.after = null;
    if (statusTimestampAfter !== undefined && statusTimestampAfter !== null) {
      try {
        this.after = parseTimestamp(statusTimestampAfter);
      } catch (e) {
        const shown = JSON.stringify([...statusTimestampAfter].slice(0, 64).join(''));
        throw new StoreError('invalid-input', `invalid timestamp ${shown} (RFC 3339 expected): ${e.message}`);
      }
    }
    const size = Number(pageSize ?? 0);
    this.limit = size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
    this.cursor = pageToken === undefined || pageToken === null ? null : decodePageToken(pageToken);
  }

  hasFilters() {
    return this.contextId !== null || this.state !== null || this.after !== null;
  }

  /** Whether a parsed Task (with its status timestamp, `null` if none) matches the filters. */
  matches(task, timestamp = timestampOf(task)) {
    if (this.contextId !== null && task.contextId !== this.contextId) return false;
    if (this.state !== null) {
      const state = isObject(task.status) ? task.status.state : undefined;
      if (typeof state !== 'string') return false;
      if (normalizeState(state) !== normalizeState(this.state)) return false;
    }
    if (this.after !== null && (timestamp === null || timestamp < this.after)) return false;
    return true;
  }

  /** A collector of one page for this query. */
  collector() {
    return new PageCollector(this.limit, this.cursor);
  }
}

/**
 * Cuts one page from Tasks offered in any order, keeping at most `limit + 1` of them (so the
 * memory of a listing is bounded by its page), and counts every match for `totalSize`.
 */
export class PageCollector {
  constructor(limit, cursor = null) {
    this.limit = limit;
    this.cursor = cursor;
    /** `[key, item]` pairs in list order. */
    this.best = [];
    this.total = 0;
  }

  /** Whether an item with this key would be kept: lets a store skip reading what it drops. */
  wants(key) {
    if (this.cursor !== null && compareKeys(key, this.cursor) <= 0) return false;
    return this.best.length <= this.limit || compareKeys(key, this.best[this.best.length - 1][0]) < 0;
  }

  /** Counts a match toward the total size. */
  count() {
    this.total += 1;
  }

  /** Offers a counted match. */
  offer(key, item) {
    if (!this.wants(key)) return;
    let lo = 0;
    let hi = this.best.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareKeys(this.best[mid][0], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    this.best.splice(lo, 0, [key, item]);
    if (this.best.length > this.limit + 1) this.best.pop();
  }

  /** Counts and offers a match. */
  push(key, item) {
    this.count();
    this.offer(key, item);
  }

  /** The page: `{ items, nextPageToken, totalSize }` (`items` as `[key, item]` pairs). */
  finish() {
    const next = this.best.length > this.limit ? encodePageToken(this.best[this.limit - 1][0]) : null;
    return { items: this.best.slice(0, this.limit), nextPageToken: next, totalSize: this.total };
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
