#!/usr/bin/env node
// Builds the echo agent in JavaScript as a component with componentize-js.
//
//   node agent/build.mjs [--out <file.wasm>] [--force]
//
// Default output: <repo>/target/js/agent/toolnexus-js-agent.wasm (or under $CARGO_TARGET_DIR).
// The build is skipped when the output exists and none of its inputs (sources, WIT, this script,
// the lockfile) changed since it was made; `--force` rebuilds anyway.
//
// Steps:
// 1. Stage the WIT: js/agent/wit/world.wit as the root package, the repository's
//    wit/a2a/agent.wit as deps/a2a, and the WASI 0.2.12 packages shipped with the pinned jco
//    (io, clocks) as deps/wasi-*.
// 2. componentize() src/agent.js against world `js-agent`, with the StarlingMonkey features the
//    host does not provide (`http`, `fetch-event`) disabled.
// 3. Check the result imports only `wasi:` interfaces and `toolnexus:a2a/task` (and `types`), and
//    exports the `agent` and `config` interfaces, then write it with its input stamp.

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
const CONTRACT = 'wit/a2a/agent.wit';

const { values: args } = parseArgs({
  options: {
    out: { type: 'string' },
    force: { type: 'boolean', default: false },
  },
});
const targetDir = process.env.CARGO_TARGET_DIR
  ? resolve(process.env.CARGO_TARGET_DIR)
  : join(repo, 'target');
const out = resolve(args.out ?? join(targetDir, 'js/agent/toolnexus-js-agent.wasm'));
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
    join(repo, CONTRACT),
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
  await mkdir(join(dir, 'deps/a2a'), { recursive: true });
  await copyFile(join(here, 'wit/world.wit'), join(dir, 'world.wit'));
  await copyFile(join(repo, CONTRACT), join(dir, 'deps/a2a/agent.wit'));
  for (const pkg of ['wasi-io', 'wasi-clocks']) {
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
      console.error(`js agent: ${relative(process.cwd(), out)} is up to date`);
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
    sourcePath: join(here, 'src/agent.js'),
    witPath: staged,
    worldName: 'js-agent',
    // The host links WASI 0.2 (clocks, random, cli stdio) and the `task` interface, nothing else.
    disableFeatures: ['http', 'fetch-event'],
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);

  const { imports, exports } = await worldItems(component);
  // `types` holds only types (no functions): importing it asks the host for nothing.
  const granted = ['wasi:', 'toolnexus:a2a/task@', 'toolnexus:a2a/types@'];
  const foreign = imports.filter((name) => !granted.some((prefix) => name.startsWith(prefix)));
  if (foreign.length > 0) {
    throw new Error(
      `the component imports interfaces the host does not give: ${foreign.join(', ')}`,
    );
  }
  for (const wanted of ['agent', 'config']) {
    if (!exports.some((name) => name.startsWith(`toolnexus:a2a/${wanted}@`))) {
      throw new Error(`the component does not export toolnexus:a2a/${wanted}`);
    }
  }

  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, component);
  await writeFile(stampPath, `${digest}\n`);
  const mb = (component.length / (1024 * 1024)).toFixed(1);
  console.error(`js agent: wrote ${relative(process.cwd(), out)} (${mb} MiB) in ${seconds} s`);
  console.error(`js agent: imports ${imports.join(', ')}`);
}

main().catch((e) => {
  console.error(`js agent build failed: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
