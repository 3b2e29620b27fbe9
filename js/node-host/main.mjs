#!/usr/bin/env node
// Runs the Rust file-store component (transpiled by jco, see build.mjs) inside Node.js, over a
// directory on disk, through @bytecodealliance/preview2-shim. It runs any task-store component
// transpiled by build.mjs (`--bindings`); the tests also run the JavaScript store's component.
//
//   node node-host/main.mjs --dir <store-dir> [--bindings <dir>] [--durability full|relaxed]
//        [--lock-lease-ms <ms>] [--versions] [--total] <command> ...
//
// The component must export `toolnexus:task-store@0.4.0` (wit/task-store.wit), the one contract
// version the Rust host speaks as well; one exporting another version is refused with a message
// naming its version and 0.4.0 (see "Contract versions" in docs/write-your-own-store.md).
//
// Commands (one line of output per Task, JSON text exactly as the store returned it):
//   get <id>...        the Task with each id, or `null`; with no ids, the ids are read from
//                      stdin, one JSON string per line (for ids no command line can carry: NUL).
//                      With --versions: `{"version":<n>,"task":<the Task>}` instead.
//   save [--if any|absent|<version>] <file>...
//                      save the Task in each file (its text, verbatim), if the condition holds
//                      (default `any`); with --versions, prints each new version
//   list [<pageSize>]  every Task, walking all pages (newest status timestamp first); filters:
//                      --context-id <id>, --state <state>, --status-timestamp-after <RFC 3339>;
//                      with --total, then a last line `{"totalSize":<n>}`
//   delete <id>...     `true` or `false` per id
//   push-set <task-id> <file>...
//                      save the push config in each file (its text, verbatim) for the Task
//   push-get <task-id> <config-id>...
//                      the config with each id, or `null`
//   push-list <task-id>
//                      every config of the Task, by config id
//   push-delete <task-id> <config-id>...
//                      `true` or `false` per config id
//   bench [<n>]        n saves and n gets of one small Task; prints mean microseconds per call
//
// A failed call prints `error: <store-error case>: <message>` on stderr and exits with 2 (a
// `conflict` also names the current version: `error: conflict (current: 3): …`).

import { readFile } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import { types as filesystemTypes } from '@bytecodealliance/preview2-shim/filesystem';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');

/**
 * Lets the Rust component create and write files through preview2-shim.
 *
 * Cause: on wasm32-wasip2, Rust's std opens files with wasi-libc's `openat`, which translates
 * `O_WRONLY` (and `O_RDWR`) into the descriptor flags `write | mutate-directory`, for every
 * file, not just directories (libc-bottom-half `openat`: `fs_flags |= WRITE | MUTATE_DIRECTORY`).
 * preview2-shim's Node `Descriptor.openAt` (lib/nodejs/filesystem.js, dist/nodejs/filesystem.js
 * in the package) refuses any open whose descriptor flags carry `mutateDirectory` (or
 * `requestedWriteSync`): `throw "unsupported"`. So the component's first write — creating its
 * temp file with `OpenOptions::new().write(true).create_new(true)`, i.e. `O_WRONLY | O_CREAT |
 * O_EXCL` — fails with `unsupported`, which wasi-libc reports as ENOTSUP, "Not supported (os
 * error 58)". Reads open with `read` only and work.
 *
 * wasmtime's `open-at` accepts `mutate-directory` (it only refuses the three *-sync flags it
 * cannot honour), and the flag has no meaning for the regular file being opened, so dropping it
 * before the shim sees it gives the shim wasmtime's behaviour. Every other flag — `create`,
 * `exclusive` (O_EXCL: never clobber an existing temp file), `write`, `read` — passes through,
 * and the sync flags stay refused, as in wasmtime.
 */
export function acceptMutateDirectoryOnOpen(Descriptor) {
  const openAt = Descriptor.prototype.openAt;
  if (openAt.acceptsMutateDirectory) return;
  const patched = function openAtWithoutMutateDirectory(pathFlags, path, openFlags, descriptorFlags) {
    const flags = descriptorFlags?.mutateDirectory
      ? { ...descriptorFlags, mutateDirectory: false }
      : descriptorFlags;
    return openAt.call(this, pathFlags, path, openFlags, flags);
  };
  patched.acceptsMutateDirectory = true;
  Descriptor.prototype.openAt = patched;
}

/** The contract version this program drives (wit/task-store.wit). */
const CONTRACT = '0.4.0';

/**
 * Instantiates the transpiled store component over `dir` and configures it as the Rust host
 * does (`durability`, and `lock-lease-ms` when given), but without `answers-checked`: this host
 * does not check what `get` answers, so the component checks its Task files itself. Returns the
 * interfaces (`store`: `get(id)` → `{ task, version }` or `undefined`; `save(task, condition)` →
 * the new version, a BigInt; `catalog`: `list(query)` → `{ tasks, nextPageToken, totalSize }`,
 * `delete(id)`; `pushConfigs`: `set`, `get`, `list`, `delete`, `undefined` for a component
 * without them). Throws if the component does not export `store` at contract 0.4.0, naming the
 * version it exports instead.
 */
export async function openFileStore({ bindings, dir, durability = 'full', lockLeaseMs }) {
  acceptMutateDirectoryOnOpen(filesystemTypes.Descriptor);
  mkdirSync(dir, { recursive: true });
  const shim = new WASIShim({
    sandbox: { preopens: { '/': resolve(dir) }, env: {}, args: [], enableNetwork: false },
  });
  const { instantiate } = await import(pathToFileURL(join(bindings, 'file-store.js')).href);
  const component = await instantiate(
    async (name) => WebAssembly.compile(await readFile(join(bindings, name))),
    shim.getImportObject(),
  );
  const pick = (name) => component[`toolnexus:task-store/${name}@${CONTRACT}`];
  if (!pick('store')) {
    const other = Object.keys(component).find((k) => k.startsWith('toolnexus:task-store/store@'));
    throw new Error(
      other
        ? `${bindings}: the component exports toolnexus:task-store@${other.split('@')[1]}, but this program speaks only ${CONTRACT}: rebuild it against wit/task-store.wit`
        : `${bindings} exports no toolnexus:task-store/store@${CONTRACT}`,
    );
  }
  const settings = [['durability', durability]];
  if (lockLeaseMs !== undefined) settings.push(['lock-lease-ms', String(lockLeaseMs)]);
  pick('config')?.configure(settings);
  return { store: pick('store'), catalog: pick('catalog'), pushConfigs: pick('push-configs') };
}

/** A `--if` value as a WIT `condition`. */
function parseCondition(text) {
  if (text === undefined || text === 'any') return { tag: 'any' };
  if (text === 'absent') return { tag: 'absent' };
  if (/^[0-9]+$/.test(text)) return { tag: 'version', val: BigInt(text) };
  console.error(`--if takes any, absent or a version number, not ${JSON.stringify(text)}`);
  process.exit(64);
}

async function idsFromStdin() {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

function fail(e) {
  const payload = e && typeof e === 'object' && 'payload' in e ? e.payload : null;
  if (payload && typeof payload === 'object' && payload.tag === 'conflict') {
    const current = payload.val?.current;
    const shown = current === undefined || current === null ? 'none' : String(current);
    console.error(`error: conflict (current: ${shown}): ${payload.val?.message}`);
  } else if (payload && typeof payload === 'object' && 'tag' in payload) {
    console.error(`error: ${payload.tag}: ${payload.val}`);
  } else {
    console.error(`error: ${e && e.stack ? e.stack : e}`);
  }
  process.exit(2);
}

async function main() {
  const { values: opts, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      dir: { type: 'string' },
      bindings: { type: 'string' },
      durability: { type: 'string', default: 'full' },
      'lock-lease-ms': { type: 'string' },
      versions: { type: 'boolean', default: false },
      total: { type: 'boolean', default: false },
      if: { type: 'string' },
      'context-id': { type: 'string' },
      state: { type: 'string' },
      'status-timestamp-after': { type: 'string' },
    },
  });
  const [command, ...rest] = positionals;
  if (!opts.dir || !command) {
    console.error('usage: main.mjs --dir <store-dir> [--bindings <dir>] [--durability full|relaxed] [--lock-lease-ms <ms>] [--versions] [--total] get|save|list|delete|push-set|push-get|push-list|push-delete|bench ...');
    process.exit(64);
  }
  const targetDir = process.env.CARGO_TARGET_DIR
    ? resolve(process.env.CARGO_TARGET_DIR)
    : join(repo, 'target');
  const bindings = resolve(opts.bindings ?? join(targetDir, 'js/node-host/file-store'));
  const { store, catalog, pushConfigs } = await openFileStore({
    bindings,
    dir: opts.dir,
    durability: opts.durability,
    lockLeaseMs: opts['lock-lease-ms'],
  });
  const print = (line) => process.stdout.write(`${line}\n`);

  switch (command) {
    case 'get': {
      const ids = rest.length > 0 ? rest : await idsFromStdin();
      for (const id of ids) {
        const found = store.get(id);
        if (found === undefined || found === null) print('null');
        else if (opts.versions) print(`{"version":${found.version ?? 'null'},"task":${found.task}}`);
        else print(found.task);
      }
      break;
    }
    case 'save': {
      const condition = parseCondition(opts.if);
      for (const file of rest) {
        const version = store.save(await readFile(file, 'utf8'), condition);
        if (opts.versions) print(String(version ?? 'null'));
      }
      break;
    }
    case 'list': {
      let pageToken;
      let totalSize;
      do {
        const page = catalog.list({
          contextId: opts['context-id'],
          state: opts.state,
          statusTimestampAfter: opts['status-timestamp-after'],
          pageSize: Number(rest[0] ?? 0),
          pageToken,
        });
        page.tasks.forEach(print);
        totalSize = page.totalSize;
        pageToken = page.nextPageToken ?? undefined;
      } while (pageToken !== undefined);
      if (opts.total) print(`{"totalSize":${totalSize ?? 'null'}}`);
      break;
    }
    case 'delete':
      for (const id of rest) print(String(catalog.delete(id)));
      break;
    case 'push-set':
    case 'push-get':
    case 'push-list':
    case 'push-delete': {
      if (!pushConfigs) {
        console.error(`the component keeps no push configs (it exports no toolnexus:task-store/push-configs@${CONTRACT})`);
        process.exit(2);
      }
      const [taskId, ...args] = rest;
      if (command === 'push-set') {
        for (const file of args) pushConfigs.set(taskId, await readFile(file, 'utf8'));
      } else if (command === 'push-get') {
        for (const id of args) print(pushConfigs.get(taskId, id) ?? 'null');
      } else if (command === 'push-list') {
        pushConfigs.list(taskId).forEach(print);
      } else {
        for (const id of args) print(String(pushConfigs.delete(taskId, id)));
      }
      break;
    }
    case 'bench': {
      const n = Number(rest[0] ?? 200);
      const task = JSON.stringify({ id: 'bench-task', status: { state: 'working' }, n: 0 });
      const any = { tag: 'any' };
      store.save(task, any); // warm up
      let started = process.hrtime.bigint();
      for (let i = 0; i < n; i++) store.save(task, any);
      const save = Number(process.hrtime.bigint() - started) / 1000 / n;
      started = process.hrtime.bigint();
      for (let i = 0; i < n; i++) store.get('bench-task');
      const get = Number(process.hrtime.bigint() - started) / 1000 / n;
      print(JSON.stringify({ calls: n, durability: opts.durability, saveMicros: Math.round(save), getMicros: Math.round(get) }));
      break;
    }
    default:
      console.error(`unknown command ${command}`);
      process.exit(64);
  }
}

main().catch(fail);
