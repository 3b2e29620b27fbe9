#!/usr/bin/env node
// Runs the Rust file-store component (transpiled by jco, see build.mjs) inside Node.js, over a
// directory on disk, through @bytecodealliance/preview2-shim. It runs any task-store component
// transpiled by build.mjs (`--bindings`); the tests also run the JavaScript store's component.
//
//   node node-host/main.mjs --dir <store-dir> [--bindings <dir>] [--durability full|relaxed] <command> ...
//
// Commands (one line of output per Task, JSON text exactly as the store returned it):
//   get <id>...        the Task with each id, or `null`; with no ids, the ids are read from
//                      stdin, one JSON string per line (for ids no command line can carry: NUL)
//   save <file>...     save the Task in each file (its text, verbatim)
//   list [<pageSize>]  every Task, walking all pages in id order
//   delete <id>...     `true` or `false` per id
//   bench [<n>]        n saves and n gets of one small Task; prints mean microseconds per call
//
// A failed call prints `error: <store-error case>: <message>` on stderr and exits with 2.

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

/** Instantiates the transpiled file store over `dir` and configures its durability. */
export async function openFileStore({ bindings, dir, durability = 'full' }) {
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
  const pick = (name) => component[`toolnexus:task-store/${name}@0.1.0`] ?? component[name];
  pick('config')?.configure([['durability', durability]]);
  return { store: pick('store'), catalog: pick('catalog') };
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
  if (payload && typeof payload === 'object' && 'tag' in payload) {
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
    },
  });
  const [command, ...rest] = positionals;
  if (!opts.dir || !command) {
    console.error('usage: main.mjs --dir <store-dir> [--bindings <dir>] [--durability full|relaxed] get|save|list|delete|bench ...');
    process.exit(64);
  }
  const targetDir = process.env.CARGO_TARGET_DIR
    ? resolve(process.env.CARGO_TARGET_DIR)
    : join(repo, 'target');
  const bindings = resolve(opts.bindings ?? join(targetDir, 'js/node-host/file-store'));
  const { store, catalog } = await openFileStore({
    bindings,
    dir: opts.dir,
    durability: opts.durability,
  });
  const print = (line) => process.stdout.write(`${line}\n`);

  switch (command) {
    case 'get': {
      const ids = rest.length > 0 ? rest : await idsFromStdin();
      for (const id of ids) print(store.get(id) ?? 'null');
      break;
    }
    case 'save':
      for (const file of rest) store.save(await readFile(file, 'utf8'));
      break;
    case 'list': {
      let pageToken;
      do {
        const page = catalog.list({ pageSize: Number(rest[0] ?? 0), pageToken });
        page.tasks.forEach(print);
        pageToken = page.nextPageToken ?? undefined;
      } while (pageToken !== undefined);
      break;
    }
    case 'delete':
      for (const id of rest) print(String(catalog.delete(id)));
      break;
    case 'bench': {
      const n = Number(rest[0] ?? 200);
      const task = JSON.stringify({ id: 'bench-task', status: { state: 'working' }, n: 0 });
      store.save(task); // warm up
      let started = process.hrtime.bigint();
      for (let i = 0; i < n; i++) store.save(task);
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
