// Tests of the store's push-notification configs (src/push.js, through the `push-configs` WIT
// export) in Node, over a real temp directory: the files are exactly where and what the Rust
// store writes (docs/on-disk-format.md, "Push-notification configs"), and
// tests/tests/all/js_store.rs checks the two stores read each other's.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { attempt, openInstance } from '../test-support/store.mjs';

const dirs = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'tn-js-push-'));
  dirs.push(dir);
  return dir;
}

const hook = (id, extra = {}) => JSON.stringify({ id, url: `https://example.com/${id}`, ...extra });

test('a config is written as given, where the Rust store keeps it, and read back', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  // Pretty-printed text is kept byte for byte: the store never rewrites a config.
  const text = '{ "id": "c/1",\n  "url": "https://example.com/h", "n": 9007199254740993 }';
  pushConfigs.set('a/b', text);
  assert.equal(readFileSync(join(dir, '.push', 'a%2Fb', 'c%2F1.json'), 'utf8'), text);
  assert.equal(pushConfigs.get('a/b', 'c/1'), text);
  assert.deepEqual(pushConfigs.list('a/b'), [text]);
  // Nothing but the config: no temp file left, no Task file made.
  assert.deepEqual(readdirSync(join(dir, '.push', 'a%2Fb')), ['c%2F1.json']);
  assert.deepEqual(readdirSync(dir), ['.push']);
});

test('a miss is undefined, an empty list is empty, and a delete says whether there was one', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  assert.equal(pushConfigs.get('t', 'c1'), undefined);
  assert.deepEqual(pushConfigs.list('t'), []);
  assert.equal(pushConfigs.delete('t', 'c1'), false);
  pushConfigs.set('t', hook('c1'));
  pushConfigs.set('t', hook('c1', { replaced: true }));
  assert.deepEqual(pushConfigs.list('t'), [hook('c1', { replaced: true })]);
  assert.equal(pushConfigs.delete('t', 'c1'), true);
  assert.equal(pushConfigs.delete('t', 'c1'), false);
  assert.equal(pushConfigs.get('t', 'c1'), undefined);
  // The config directory stays, as the Rust store leaves it.
  assert.ok(existsSync(join(dir, '.push', 't')));
});

test('configs are listed by the UTF-8 bytes of their ids, not by file name', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  // File names sort `%2E.json` < `-.json` < `B.json`; ids sort `-` < `.` < `B` < `a` < `é` < `😀`.
  const ids = ['é', 'a', '.', 'B', '😀', '-'];
  for (const id of ids) pushConfigs.set('t', hook(id));
  const listed = pushConfigs.list('t').map((text) => JSON.parse(text).id);
  assert.deepEqual(listed, ['-', '.', 'B', 'a', 'é', '😀']);
  assert.ok(existsSync(join(dir, '.push', 't', '%2E.json')));
});

test('bad input is invalid-input and writes nothing', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  const big = JSON.stringify({ id: 'c', pad: 'x'.repeat(64 * 1024) });
  const cases = [
    ['t', 'not json', 'push config is not valid JSON'],
    ['t', '[1]', 'push config must be a JSON object, found array'],
    ['t', '{"url":"u"}', 'push config has no "id" member'],
    ['t', '{"id":7}', 'push config "id" must be a string, found number'],
    ['t', '{"id":""}', 'push config "id" is an empty string'],
    ['t', big, `push config is ${big.length} bytes of JSON, over the limit of 65536`],
    ['', hook('c1'), 'task id is empty'],
  ];
  for (const [taskId, text, message] of cases) {
    const r = attempt(() => pushConfigs.set(taskId, text));
    assert.equal(r.err?.tag, 'invalid-input', `${text.slice(0, 40)}: ${JSON.stringify(r)}`);
    assert.ok(r.err.val.startsWith(message), `${r.err.val} starts with ${message}`);
  }
  for (const call of [() => pushConfigs.get('t', ''), () => pushConfigs.delete('t', ''), () => pushConfigs.list('')]) {
    assert.equal(attempt(call).err?.tag, 'invalid-input');
  }
  assert.deepEqual(readdirSync(dir), []);
});

test('a file that is not the config its name says is corrupt, named, never skipped', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  pushConfigs.set('t', hook('c1'));
  pushConfigs.set('t', hook('c2'));
  const file = join(dir, '.push', 't', 'c1.json');
  for (const [content, says] of [
    [hook('c9'), 'holds push config "c9", not "c1"'],
    ['{"id":', 'push config is not valid JSON'],
  ]) {
    writeFileSync(file, content);
    const got = attempt(() => pushConfigs.get('t', 'c1'));
    assert.equal(got.err?.tag, 'corrupt');
    assert.ok(got.err.val.includes('/.push/t/c1.json'), got.err.val);
    assert.ok(got.err.val.includes(says), got.err.val);
    const listed = attempt(() => pushConfigs.list('t'));
    assert.equal(listed.err?.tag, 'corrupt', JSON.stringify(listed));
  }
  writeFileSync(file, 'x'.repeat(64 * 1024 + 1));
  assert.match(attempt(() => pushConfigs.get('t', 'c1')).err.val, /over the largest push config/);
});

test('temp files and foreign names in a config directory are not configs', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  pushConfigs.set('t', hook('c1'));
  writeFileSync(join(dir, '.push', 't', '.tmp-0123456789abcdef0123456789abcdef'), 'half a config');
  writeFileSync(join(dir, '.push', 't', 'notes.txt'), 'not a config');
  writeFileSync(join(dir, '.push', 't', '.json'), 'not a config');
  assert.deepEqual(pushConfigs.list('t'), [hook('c1')]);
});

test('the Task listing skips .push, and deleting a Task takes its configs only', async () => {
  const dir = tempDir();
  const { store, catalog, pushConfigs } = await openInstance(dir);
  store.save(JSON.stringify({ id: 't1' }), { tag: 'any' });
  store.save(JSON.stringify({ id: 't2' }), { tag: 'any' });
  pushConfigs.set('t1', hook('c1'));
  pushConfigs.set('t1', hook('c2'));
  pushConfigs.set('t2', hook('c1'));
  const page = catalog.list({ pageSize: 10 });
  assert.deepEqual(page.tasks.map((t) => JSON.parse(t).id).sort(), ['t1', 't2']);
  assert.equal(page.totalSize, 2n);
  assert.equal(catalog.delete('t1'), true);
  assert.ok(!existsSync(join(dir, '.push', 't1')));
  assert.deepEqual(pushConfigs.list('t1'), []);
  assert.deepEqual(pushConfigs.list('t2'), [hook('c1')]);
  // Configs of a Task that was never saved go with a delete of its id too.
  pushConfigs.set('ghost', hook('c1'));
  assert.equal(catalog.delete('ghost'), false);
  assert.ok(!existsSync(join(dir, '.push', 'ghost')));
});

test('configs survive a new instance; its sweep removes only stale temp files', async () => {
  const dir = tempDir();
  const first = await openInstance(dir);
  first.pushConfigs.set('t', hook('c1'));
  const stale = join(dir, '.push', 't', '.tmp-00000000000000000000000000000000');
  const young = join(dir, '.push', 't', '.tmp-11111111111111111111111111111111');
  writeFileSync(stale, 'left by a crashed writer');
  writeFileSync(young, 'a live writer');
  const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
  utimesSync(stale, twoHoursAgo, twoHoursAgo);
  const second = await openInstance(dir);
  assert.equal(second.pushConfigs.get('t', 'c1'), hook('c1'));
  assert.ok(!existsSync(stale), 'the stale temp file was swept');
  assert.ok(existsSync(young), 'a young temp file may be a live writer’s');
});

test('a Task id too long for a file name gets the hashed name, as its Task file does', async () => {
  const dir = tempDir();
  const { pushConfigs } = await openInstance(dir);
  const id = 't'.repeat(300);
  pushConfigs.set(id, hook('c'));
  const sha = createHash('sha256').update(id).digest('hex');
  const stem = `${'t'.repeat(185)}~${sha}`;
  assert.deepEqual(readdirSync(join(dir, '.push')), [stem]);
  assert.equal(readFileSync(join(dir, '.push', stem, 'c.json'), 'utf8'), hook('c'));
});

test('a save makes the config directories it needs, beside anything already there', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, '.push', 'other'), { recursive: true });
  const { pushConfigs } = await openInstance(dir);
  pushConfigs.set('t', hook('c1'));
  assert.deepEqual(readdirSync(join(dir, '.push')).sort(), ['other', 't']);
});
