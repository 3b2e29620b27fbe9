// One writer process of the race tests in test/dir.test.mjs:
//
//   node race-writer.mjs <dir> <id> <saves> <condition: any|absent|<version>>
//
// Prints `{"ready":true}` once loaded, waits until <dir>/go exists (so that all writers start
// together), then saves the Task <id> <saves> times with the condition and prints one JSON line
// per save: `{"ok":"<version>"}` or `{"err":"<tag>","current":"<version>"|null}`.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { attempt, openInstance } from './store.mjs';

const [dir, id, saves, condition] = process.argv.slice(2);
const { store } = await openInstance(dir, [['lock-lease-ms', '10000']]);
const wanted =
  condition === 'any' || condition === 'absent'
    ? { tag: condition }
    : { tag: 'version', val: BigInt(condition) };
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
while (!existsSync(join(dir, 'go'))) await new Promise((r) => setTimeout(r, 2));
for (let i = 0; i < Number(saves); i++) {
  const r = attempt(() => store.save(JSON.stringify({ id, writer: process.pid, i }), wanted));
  const line =
    'ok' in r
      ? { ok: String(r.ok) }
      : { err: r.err.tag, current: r.err.val?.current === undefined ? null : String(r.err.val.current), message: r.err.val?.message ?? r.err.val };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
