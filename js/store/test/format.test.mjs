// Unit tests of the JavaScript store's format rules, run under Node: `npm test` (or
// `node --test store/test/`). The component build runs the same module inside StarlingMonkey.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  PageCollector,
  Query,
  compareIds,
  compareKeys,
  decodeFileName,
  decodePageToken,
  encodeId,
  encodePageToken,
  isTaskFileName,
  normalizeState,
  parseRecord,
  parseTask,
  parseTimestamp,
  recordText,
  sha256Hex,
  sideNames,
  timestampOf,
  versionOf,
} from '../src/format.js';

test('file names follow the table in docs/on-disk-format.md', () => {
  const table = [
    ['abc-123', 'abc-123.json'],
    ['a/b', 'a%2Fb.json'],
    ['a_b', 'a_b.json'],
    ['a%2Fb', 'a%252Fb.json'],
    ['..', '%2E..json'],
    ['.hidden', '%2Ehidden.json'],
    ['a\0b', 'a%00b.json'],
    ['é', '%C3%A9.json'],
    ['~', '%7E.json'],
    ['🚀', '%F0%9F%9A%80.json'],
  ];
  for (const [id, name] of table) {
    assert.equal(encodeId(id), name, id);
    assert.equal(decodeFileName(name), id, name);
  }
});

test('long ids get a hashed name of at most 255 bytes that never splits an escape', () => {
  const long = 'x'.repeat(10_000);
  const name = encodeId(long);
  const sha = createHash('sha256').update(long).digest('hex');
  assert.equal(name, `${'x'.repeat(185)}~${sha}.json`);
  assert.equal(name.length, 255);
  assert.equal(decodeFileName(name), null);
  for (let pad = 0; pad < 4; pad++) {
    const id = 'y'.repeat(pad) + '/'.repeat(200);
    const n = encodeId(id);
    const prefix = n.slice(0, n.indexOf('~'));
    assert.match(prefix, /^y*(%2F)*$/, id);
    assert.ok(n.length <= 255);
  }
  assert.notEqual(encodeId('x'.repeat(10_000)), encodeId(`${'x'.repeat(9_999)}y`));
});

test('sha256 agrees with node:crypto', () => {
  for (const len of [0, 1, 55, 56, 63, 64, 65, 1000, 100_000]) {
    const bytes = new Uint8Array(len).map((_, i) => (i * 31 + len) & 0xff);
    assert.equal(sha256Hex(bytes), createHash('sha256').update(bytes).digest('hex'), `len ${len}`);
  }
});

test('only canonical plain names decode', () => {
  for (const name of ['a%2fb.json', '%41.json', '.tmp-1.json', 'x~y.json', 'a b.json', 'a.txt', '.json', '%2.json', '%C3.json']) {
    assert.equal(decodeFileName(name), null, name);
  }
  assert.ok(isTaskFileName('a.json') && !isTaskFileName('.a.json') && !isTaskFileName('.json'));
});

test('empty ids are refused', () => {
  assert.throws(() => encodeId(''), (e) => e.tag === 'invalid-input');
});

test('task text is classified like format/src/task.rs', () => {
  assert.equal(parseTask('{"id":"t-1","status":{"state":"submitted"}}').id, 't-1');
  assert.equal(parseTask('{"status":{},"id":"late"}').id, 'late');
  assert.equal(parseTask('{"id":"a","id":"b"}').id, 'b');
  const cases = [
    ['not json', /not valid JSON/],
    ['{"id":"t"} trailing', /not valid JSON/],
    ['[1,2]', /found array/],
    ['"s"', /found string/],
    ['-0.0', /found number/],
    ['null', /found null/],
    ['true', /found boolean/],
    ['{}', /no "id" member/],
    ['{"id":7}', /must be a string, found number/],
    ['{"id":null}', /must be a string, found null/],
    ['{"id":["x"]}', /must be a string, found array/],
    ['{"id":""}', /empty string/],
    ['{"id":"\\ud800"}', /not valid Unicode/],
    ['\ufeff{"id":"bom"}', /not valid JSON/],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseTask(text), message, text);
  }
});

test('ids order by UTF-8 bytes, not UTF-16 units', () => {
  // U+FF5E (3 UTF-8 bytes, EF BD 9E) sorts before U+1F680 (F0 ...), although its UTF-16 unit
  // 0xFF5E is greater than the surrogate 0xD83D.
  assert.ok(compareIds('\uff5e', '🚀') < 0);
  assert.ok(compareIds('a', 'ab') < 0 && compareIds('b', 'ab') > 0 && compareIds('x', 'x') === 0);
});

test('queries filter by context, state spelling and status timestamp, and default and cap pages', () => {
  assert.equal(new Query({ pageSize: 0 }).limit, 50);
  assert.equal(new Query({ pageSize: 5000 }).limit, 1000);
  const q = new Query({ state: 'input-required', pageSize: 2 });
  assert.ok(q.matches({ id: 'a', status: { state: 'TASK_STATE_INPUT_REQUIRED' } }));
  assert.ok(!q.matches({ id: 'a', status: { state: 'completed' } }));
  assert.ok(!q.matches({ id: 'a', status: ['input-required'] }));
  assert.ok(!q.matches({ id: 'a' }));
  const c = new Query({ contextId: 'c1' });
  assert.ok(c.matches({ id: 'a', contextId: 'c1' }) && !c.matches({ id: 'a', contextId: 'c10' }));
  assert.equal(normalizeState('TASK_STATE_WORKING'), 'working');
  // At or after, compared as instants (the same cases as shared/format/src/query.rs).
  const t = new Query({ statusTimestampAfter: '2025-01-01T12:00:00Z' });
  const at = (timestamp) => ({ id: 'a', status: { state: 'working', timestamp } });
  assert.ok(t.matches(at('2025-01-01T12:00:00Z')));
  assert.ok(t.matches(at('2025-01-01T13:00:00.000001+01:00')));
  assert.ok(!t.matches(at('2025-01-01T12:59:59+01:00')));
  assert.ok(!t.matches(at('2025-01-01T11:59:59.999999999Z')), 'one nanosecond before');
  assert.ok(!t.matches(at('not a time')));
  assert.ok(!t.matches({ id: 'a' }), 'no status timestamp never matches');
  assert.throws(
    () => new Query({ statusTimestampAfter: 'yesterday' }),
    (e) => e.tag === 'invalid-input' && /invalid timestamp "yesterday" \(RFC 3339 expected\)/.test(e.message),
  );
});

test('RFC 3339 timestamps parse to exact nanoseconds with the time crate rules', () => {
  const ns = (text) => parseTimestamp(text);
  assert.equal(ns('1970-01-01T00:00:00Z'), 0n);
  assert.equal(ns('2025-06-01T12:00:00.5Z'), BigInt(Date.parse('2025-06-01T12:00:00.5Z')) * 1_000_000n);
  assert.equal(ns('2025-06-01T14:00:00+02:00'), ns('2025-06-01T12:00:00Z'));
  assert.equal(ns('2025-06-01T09:30:00-02:30'), ns('2025-06-01T12:00:00Z'));
  // Nanosecond precision, beyond what Date.parse keeps; digits past the ninth are ignored.
  assert.equal(ns('2025-01-01T00:00:00.000000001Z') - ns('2025-01-01T00:00:00Z'), 1n);
  assert.equal(ns('2025-01-01T00:00:00.1234567899999Z') - ns('2025-01-01T00:00:00Z'), 123_456_789n);
  assert.equal(ns('1969-12-31T23:59:59.5Z'), -500_000_000n);
  assert.equal(ns('0000-01-01T00:00:00Z'), -62_167_219_200n * 1_000_000_000n);
  assert.equal(ns('9999-12-31T23:59:59.999999999Z'), 253_402_300_799_999_999_999n);
  // Any one-byte separator, `z` and `Z`.
  assert.equal(ns('2025-01-01 00:00:00z'), ns('2025-01-01T00:00:00Z'));
  assert.equal(ns('2024-02-29T00:00:00Z') + 86_400_000_000_000n, ns('2024-03-01T00:00:00Z'));
  // A leap second is the last nanosecond of the month's last second, in UTC only.
  assert.equal(ns('2016-12-31T23:59:60Z'), ns('2016-12-31T23:59:59.999999999Z'));
  assert.equal(ns('2017-01-01T00:59:60+01:00'), ns('2016-12-31T23:59:59.999999999Z'));
  for (const bad of [
    '',
    '2025-01-01',
    '2025-01-01T00:00:00',
    '25-01-01T00:00:00Z',
    '2025-1-01T00:00:00Z',
    '2025-13-01T00:00:00Z',
    '2025-00-01T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2025-04-31T00:00:00Z',
    '2025-01-00T00:00:00Z',
    '2025-01-01T24:00:00Z',
    '2025-01-01T00:60:00Z',
    '2025-01-01T00:00:61Z',
    '2025-01-15T23:59:60Z',
    '2025-01-01T00:00:00.Z',
    '2025-01-01T00:00:00+24:00',
    '2025-01-01T00:00:00+01:60',
    '2025-01-01T00:00:00+0100',
    '2025-01-01T00:00:00Z ',
    '2025-01-01é00:00:00Z',
    '２０２５-01-01T00:00:00Z',
  ]) {
    assert.throws(() => parseTimestamp(bad), Error, JSON.stringify(bad));
  }
  assert.equal(timestampOf({ id: 'a', status: { timestamp: '1970-01-01T00:00:01Z' } }), 1_000_000_000n);
  assert.equal(timestampOf({ id: 'a', status: { timestamp: 'soon' } }), null);
  assert.equal(timestampOf({ id: 'a', status: { timestamp: 5 } }), null);
  assert.equal(timestampOf({ id: 'a', status: [] }), null);
});

test('list order: newest timestamp first, ties by UTF-8 id, untimed last by id', () => {
  const key = (ts, id) => ({ timestamp: ts === null ? null : parseTimestamp(ts), id });
  const keys = [
    key(null, 'b'),
    key('2025-01-01T00:00:00Z', 'z'),
    key('2025-01-02T00:00:00Z', 'y'),
    key(null, 'a'),
    key('2025-01-01T00:00:00Z', 'c'),
    key('2025-01-01T01:00:00+01:00', '🚀'),
    key('2025-01-01T01:00:00+01:00', '\uff5e'),
  ];
  keys.sort(compareKeys);
  assert.deepEqual(keys.map((k) => k.id), ['y', 'c', 'z', '\uff5e', '🚀', 'a', 'b']);
});

test('a page collector keeps one page plus one, counts all, and walks every item once', () => {
  const keys = [];
  for (let i = 0; i < 100; i++) {
    const ts = i % 7 === 0 ? null : parseTimestamp(`2025-01-01T00:00:${String(i % 60).padStart(2, '0')}Z`);
    keys.push({ timestamp: ts, id: `t${String(i).padStart(3, '0')}` });
  }
  const all = [...keys].sort(compareKeys);
  const walked = [];
  let token = null;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 100);
    const q = new Query({ pageSize: 3, pageToken: token });
    const c = q.collector();
    for (const k of [...keys].reverse()) {
      c.push(k, k.id);
      assert.ok(c.best.length <= 4, 'never more than page size + 1 kept');
    }
    const cut = c.finish();
    assert.equal(cut.totalSize, 100);
    walked.push(...cut.items.map(([k]) => k));
    token = cut.nextPageToken;
    if (token === null) break;
  }
  assert.deepEqual(walked, all);
});

test('page tokens round-trip, are the Rust stores\' tokens, and garbage is invalid-input', () => {
  for (const k of [
    { timestamp: null, id: 'a/b' },
    { timestamp: parseTimestamp('1969-12-31T23:59:59.5Z'), id: 'ü' },
    { timestamp: 1_700_000_000_123_456_789n, id: '🚀\u0000"' },
  ]) {
    assert.deepEqual(decodePageToken(encodePageToken(k)), k);
  }
  // base64url (no padding) of the JSON `[timestamp ns as a string or null, id]`, as
  // shared/format/src/query.rs `SortKey::encode` writes it.
  assert.equal(encodePageToken({ timestamp: null, id: 'a' }), 'W251bGwsImEiXQ');
  assert.equal(encodePageToken({ timestamp: -500_000_000n, id: 'x' }), Buffer.from('["-500000000","x"]').toString('base64url'));
  const b64 = (text) => Buffer.from(text).toString('base64url');
  for (const bad of [
    '',
    '!!',
    'e30', // {}
    'W251bGwsImEiXQ==', // padded
    'W251bGwsImEiXR', // non-zero trailing bits
    'A'.repeat(4097),
    b64('[null,""]'),
    b64('["x","a"]'),
    b64('["1.5","a"]'),
    b64('[null,"a",1]'),
    b64('[1,"a"]'),
    b64('{"t":null,"id":"a"}'),
    'not a token',
  ]) {
    assert.throws(
      () => decodePageToken(bad),
      (e) => e.tag === 'invalid-input' && e.message.startsWith('invalid page token'),
      bad,
    );
    assert.throws(() => new Query({ pageToken: bad }), (e) => e.tag === 'invalid-input', bad);
  }
});

test('version records: exact text, tolerant parse, and the version a stamp gives', () => {
  assert.deepEqual(sideNames('a%2Fb.json'), { record: '.~a%2Fb.v', lock: '.~a%2Fb.l' });
  const text = recordText({ version: 3n, size: 17n, mtimeNs: 1_796_000_000_123_456_789n });
  assert.equal(
    text,
    '{"format":2,"version":3,"size":17,"mtime_ns":1796000000123456789,"check":"927536a352300425"}'.padEnd(255, ' ') + '\n',
  );
  assert.equal(text.length, 256);
  const record = parseRecord(text);
  assert.deepEqual(record, { version: 3n, size: 17n, mtimeNs: 1_796_000_000_123_456_789n, prev: null });
  // The examples in docs/on-disk-format.md (and shared/format/src/dir/).
  const prev = { size: 1200n, mtimeNs: 1_764_547_100_000_000_000n };
  const documented = recordText({ version: 7n, size: 1234n, mtimeNs: 1_764_547_200_123_456_789n, prev });
  assert.match(
    documented,
    /^\{"format":2,"version":7,"size":1234,"mtime_ns":1764547200123456789,"prev_size":1200,"prev_mtime_ns":1764547100000000000,"check":"e1df9f6a0b2b31fc"\} +\n$/,
  );
  assert.equal(documented.length, 256);
  assert.deepEqual(parseRecord(documented), { version: 7n, size: 1234n, mtimeNs: 1_764_547_200_123_456_789n, prev });
  // Format 1, which earlier savers wrote after their rename, is still read.
  assert.deepEqual(
    parseRecord('{"format":1,"version":7,"size":1234,"mtime_ns":1764547200123456789,"check":"d88e547c369014c6"}'),
    { version: 7n, size: 1234n, mtimeNs: 1_764_547_200_123_456_789n, prev: null },
  );
  // A check that does not match its fields (a torn copy) is no record; none at all is fine in
  // format 1 (a record an earlier release wrote), never in format 2.
  assert.equal(parseRecord(text.replace('"version":3,', '"version":9,')), null);
  assert.equal(parseRecord(documented.replace('"prev_size":1200,', '"prev_size":1201,')), null);
  assert.deepEqual(parseRecord('{"format":1,"version":3,"size":17,"mtime_ns":1796000000123456789}\n'), record);
  // Any key order, whitespace, other members, the last duplicate winning; u64 kept exactly.
  assert.deepEqual(
    parseRecord(' { "mtime_ns" : -1 , "x":[{"y":null}], "size":0,"version":1,"version":18446744073709551615,"format":1 }'),
    { version: 18446744073709551615n, size: 0n, mtimeNs: -1n, prev: null },
  );
  for (const bad of [
    '',
    'null',
    '[]',
    '{"format":2,"version":1,"size":1,"mtime_ns":1}',
    '{"format":3,"version":1,"size":1,"mtime_ns":1}',
    '{"format":1,"version":1,"size":1,"mtime_ns":1,"prev_size":1,"prev_mtime_ns":0}',
    '{"format":2,"version":1,"size":1,"mtime_ns":1,"prev_size":1,"check":"x"}',
    '{"version":1,"size":1,"mtime_ns":1}',
    '{"format":1,"version":1.0,"size":1,"mtime_ns":1}',
    '{"format":1,"version":-1,"size":1,"mtime_ns":1}',
    '{"format":1,"version":18446744073709551616,"size":1,"mtime_ns":1}',
    '{"format":1,"version":1,"size":1,"mtime_ns":9223372036854775808}',
    '{"format":1,"version":"1","size":1,"mtime_ns":1}',
    '{"format":1,"version":1,"size":1,"mtime_ns":1',
    '{"format":1,"version":1,"size":1,"mtime_ns":1} x',
    '{"format":1,"version":01,"size":1,"mtime_ns":1}',
  ]) {
    assert.equal(parseRecord(bad), null, bad);
  }
  const stamp = { size: 17n, mtimeNs: 1_796_000_000_123_456_789n };
  assert.equal(versionOf(record, stamp), 3n, 'the record describes the file');
  assert.equal(versionOf(record, { ...stamp, mtimeNs: stamp.mtimeNs + 1n }), 4n, 'written after it');
  assert.equal(versionOf(record, { ...stamp, size: 18n }), 4n);
  assert.equal(versionOf(null, stamp), 1n, 'no record');
  const pending = { version: 5n, size: 17n, mtimeNs: 2_000n, prev: { size: 17n, mtimeNs: 1_000n } };
  assert.equal(versionOf(pending, { size: 17n, mtimeNs: 2_000n }), 5n, 'the file the record describes');
  assert.equal(versionOf(pending, { size: 17n, mtimeNs: 1_000n }), 4n, 'the file its save replaces');
  assert.equal(versionOf(pending, { size: 18n, mtimeNs: 1_000n }), 6n, 'another: written after it');
  assert.equal(versionOf({ ...pending, version: 1n }, { size: 17n, mtimeNs: 1_000n }), 1n, 'never below 1');
  const top = { version: 18446744073709551615n, size: 0n, mtimeNs: 0n };
  assert.equal(versionOf(top, stamp), 18446744073709551615n, 'saturates');
});
