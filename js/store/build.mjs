#!/usr/bin/env node
// Builds the JavaScript task-store component with componentize-js.
//
//   node store/build.mjs [--out <file.wasm>] [--force]
//
// Default output: <repo>/target/js/store/toolnexus-js-store.wasm (or under $CARGO_TARGET_DIR).
// The build is skipped when the output exists and none of its inputs (sources, WIT, this script,
// the lockfile) changed since it was made; `--force` rebuilds anyway.
//
// Steps:
// 1. Stage the WIT: js/store/wit/world.wit as the root package, the repository's
//    wit/task-store.wit as deps/task-store, and the WASI 0.2.12 packages shipped with the pinned
//    jco (filesystem, io, clocks) as deps/wasi-*.
// 2. componentize() src/index.js against world `js-file-store`, with the StarlingMonkey features
//    the host does not provide (`http`, `fetch-event`) disabled.
// 3. Check the result imports only `wasi:` interfaces (the host grants nothing else) and exports
//    the task-store interfaces, then write it with its input stamp.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const jsDir = resolve(here, '..');
const repo = resolve(jsDir, '..');
const WASI_VERSION = '0.2.12';
const wasiWit = join(jsDir, 'node_modules/@bytecodealliance/jco/lib/wit/builtin', WASI_VERSION);

const { values: args } = parseArgs({
  options: {
    out: { type: 'string' },
    force: { type: 'boolean', default: false },
  },
});
const targetDir = process.env.CARGO_TARGET_DIR
  ? resolve(process.env.CARGO_TARGET_DIR)
  : join(repo, 'target');
const out = resolve(args.out ?? join(targetDir, 'js/store/toolnexus-js-store.wasm'));
const stampPath = `${out}.inputs`;

async function filesUnder(dir) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(path)));
    else found.push(path);
  }
  return found.sort();
}

/** SHA-256 over every input's path and contents. */
async function inputsDigest() {
  const inputs = [
    ...(await filesUnder(join(here, 'src'))),
    ...(await filesUnder(join(here, 'wit'))),
    join(here, 'build.mjs'),
    join(repo, 'wit/task-store.wit'),
    join(jsDir, 'package-lock.json'),
  ];
  const hash = createHash('sha256');
  for (const path of inputs) {
    hash.update(relative(repo, path));
    hash.update('\0');
    hash.update(await readFile(path));
    hash.update('\0');
  }
  return hash.digest('hex');
}

async function stageWit(dir) {
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'deps/task-store'), { recursive: true });
  await copyFile(join(here, 'wit/world.wit'), join(dir, 'world.wit'));
  await copyFile(join(repo, 'wit/task-store.wit'), join(dir, 'deps/task-store/task-store.wit'));
  for (const pkg of ['wasi-filesystem', 'wasi-io', 'wasi-clocks']) {
    const from = join(wasiWit, pkg);
    await mkdir(join(dir, 'deps', pkg), { recursive: true });
    for (const file of await readdir(from)) {
      await copyFile(join(from, file), join(dir, 'deps', pkg, file));
    }
  }
}

/** The `import`/`export` lines of the component's WIT, to check what it asks for. */
async function worldItems(component) {
  const { componentWit } = await import('@bytecodealliance/jco');
  const wit = await componentWit(component);
  const items = (kind) =>
    [...wit.matchAll(new RegExp(`^\\s*${kind} ([^;{]+)[;{]`, 'gm'))].map((m) => m[1].trim());
  return { imports: items('import'), exports: items('export') };
}

async function main() {
  if (!existsSync(wasiWit)) {
    throw new Error(`missing ${wasiWit}: run \`npm ci\` in ${jsDir} first`);
  }
  const digest = await inputsDigest();
  if (!args.force && existsSync(out) && existsSync(stampPath)) {
    if ((await readFile(stampPath, 'utf8')).trim() === digest) {
      console.error(`js store: ${relative(process.cwd(), out)} is up to date`);
      return;
    }
  }

  const staged = join(dirname(out), 'wit');
  await stageWit(staged);

  // componentize-js runs its WIT parser (a component itself) on preview2-shim's Node
  // filesystem, which grants no directory unless told to; give it the absolute paths we pass.
  const { _setPreopens } = await import('@bytecodealliance/preview2-shim/filesystem');
  _setPreopens({ '/': '/' });
  const { componentize } = await import('@bytecodealliance/componentize-js');

  const started = Date.now();
  const { component } = await componentize({
    sourcePath: join(here, 'src/index.js'),
    witPath: staged,
    worldName: 'js-file-store',
    // The host links WASI 0.2 (filesystem, clocks, random, cli stdio) and nothing else.
    disableFeatures: ['http', 'fetch-event'],
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);

  const { imports, exports } = await worldItems(component);
  const foreign = imports.filter((name) => !name.startsWith('wasi:'));
  if (foreign.length > 0) {
    throw new Error(`the component imports non-WASI interfaces: ${foreign.join(', ')}`);
  }
  for (const wanted of ['store', 'config', 'catalog']) {
    if (!exports.some((name) => name.startsWith(`toolnexus:task-store/${wanted}@`))) {
      throw new Error(`the component does not export toolnexus:task-store/${wanted}`);
    }
  }

  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, component);
  await writeFile(stampPath, `${digest}\n`);
  const mb = (component.length / (1024 * 1024)).toFixed(1);
  console.error(`js store: wrote ${relative(process.cwd(), out)} (${mb} MiB) in ${seconds} s`);
  console.error(`js store: imports ${imports.join(', ')}`);
}

main().catch((e) => {
  console.error(`js store build failed: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
