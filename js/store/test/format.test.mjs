// Unit tests of the JavaScript store's format rules, run under Node: `npm test` (or
// `node --test store/test/`). The component build runs the same module inside StarlingMonkey.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  Query,
  compareIds,
  decodeFileName,
  encodeId,
  isTaskFileName,
  normalizeState,
  parseTask,
  sha256Hex,
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

test('queries filter, default and cap pages, and paginate by id', () => {
  assert.equal(new Query({ pageSize: 0 }).limit, 50);
  assert.equal(new Query({ pageSize: 5000 }).limit, 1000);
  const q = new Query({ state: 'input-required', pageSize: 2 });
  assert.ok(q.matches({ id: 'a', status: { state: 'TASK_STATE_INPUT_REQUIRED' } }));
  assert.ok(!q.matches({ id: 'a', status: { state: 'completed' } }));
  assert.ok(!q.matches({ id: 'a', status: ['input-required'] }));
  assert.ok(!q.matches({ id: 'a' }));
  const c = new Query({ contextId: 'c1' });
  assert.ok(c.matches({ id: 'a', contextId: 'c1' }) && !c.matches({ id: 'a', contextId: 'c10' }));
  const { items, next } = q.paginate([['c', 3], ['a', 1], ['d', 4], ['b', 2]]);
  assert.deepEqual(items, [1, 2]);
  assert.equal(next, 'b');
  const q2 = new Query({ pageToken: next });
  assert.ok(!q2.afterToken('b') && q2.afterToken('c'));
  assert.equal(normalizeState('TASK_STATE_WORKING'), 'working');
});
