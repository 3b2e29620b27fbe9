// Builds a JavaScript component with componentize-js: what `store/build.mjs` and
// `agent/build.mjs` share. Each names its sources, its world, the contract it implements and
// what the result may import and must export; this module does the rest:
//
// 1. Skip the build when the output exists and none of its inputs (the component's `src/` and
//    `wit/`, its build script, this module, the contract, the lockfile) changed since it was
//    made (a `<out>.inputs` stamp); `--force` rebuilds anyway. `--out <file.wasm>` sets the
//    output (default under <repo>/target, or $CARGO_TARGET_DIR).
// 2. Stage the WIT: the component's `wit/world.wit` as the root package, the repository's
//    contract under deps/, and the WASI 0.2.12 packages shipped with the pinned jco.
// 3. componentize() the source against the world, with the StarlingMonkey features the host
//    does not provide (`http`, `fetch-event`) disabled.
// 4. Check what the result imports and exports, then write it with its stamp.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const jsDir = dirname(fileURLToPath(import.meta.url));
const repo = resolve(jsDir, '..');
const WASI_VERSION = '0.2.12';
const wasiWit = join(jsDir, 'node_modules/@bytecodealliance/jco/lib/wit/builtin', WASI_VERSION);

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
async function inputsDigest(inputs) {
  const hash = createHash('sha256');
  for (const path of inputs) {
    hash.update(relative(repo, path));
    hash.update('\0');
    hash.update(await readFile(path));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The `import`/`export` lines of the component's WIT, to check what it asks for. */
async function worldItems(component) {
  const { componentWit } = await import('@bytecodealliance/jco');
  const wit = await componentWit(component);
  const items = (kind) =>
    [...wit.matchAll(new RegExp(`^\\s*${kind} ([^;{]+)[;{]`, 'gm'))].map((m) => m[1].trim());
  return { imports: items('import'), exports: items('export') };
}

/**
 * Builds one component.
 *
 * - `label`: names it in messages (`js store`);
 * - `dir`: the component's folder (with `src/`, `wit/world.wit`, `build.mjs`);
 * - `source`: its entry module, relative to `dir`; `world`: the world in `wit/world.wit`;
 * - `contract`: the repository's WIT file it implements and the deps folder it is staged in
 *   (`{ file: 'wit/task-store.wit', dep: 'task-store' }`);
 * - `wasi`: the WASI packages its world uses (`wasi-io`, …);
 * - `out`: the default output, relative to the target directory;
 * - `check({ imports, exports })`: throws if the result asks for or lacks something.
 */
export async function buildComponent({ label, dir, source, world, contract, wasi, out, check }) {
  const { values: args } = parseArgs({
    options: {
      out: { type: 'string' },
      force: { type: 'boolean', default: false },
    },
  });
  const targetDir = process.env.CARGO_TARGET_DIR
    ? resolve(process.env.CARGO_TARGET_DIR)
    : join(repo, 'target');
  const output = resolve(args.out ?? join(targetDir, out));
  const stampPath = `${output}.inputs`;
  if (!existsSync(wasiWit)) {
    throw new Error(`missing ${wasiWit}: run \`npm ci\` in ${jsDir} first`);
  }
  const digest = await inputsDigest([
    ...(await filesUnder(join(dir, 'src'))),
    ...(await filesUnder(join(dir, 'wit'))),
    join(dir, 'build.mjs'),
    fileURLToPath(import.meta.url),
    join(repo, contract.file),
    join(jsDir, 'package-lock.json'),
  ]);
  if (!args.force && existsSync(output) && existsSync(stampPath)) {
    if ((await readFile(stampPath, 'utf8')).trim() === digest) {
      console.error(`${label}: ${relative(process.cwd(), output)} is up to date`);
      return;
    }
  }

  const staged = join(dirname(output), 'wit');
  const deps = join(staged, 'deps', contract.dep);
  await rm(staged, { recursive: true, force: true });
  await mkdir(deps, { recursive: true });
  await copyFile(join(dir, 'wit/world.wit'), join(staged, 'world.wit'));
  await copyFile(join(repo, contract.file), join(deps, basename(contract.file)));
  for (const pkg of wasi) {
    const from = join(wasiWit, pkg);
    await mkdir(join(staged, 'deps', pkg), { recursive: true });
    for (const file of await readdir(from)) {
      await copyFile(join(from, file), join(staged, 'deps', pkg, file));
    }
  }

  // componentize-js runs its WIT parser (a component itself) on preview2-shim's Node
  // filesystem, which grants no directory unless told to; give it the absolute paths we pass.
  const { _setPreopens } = await import('@bytecodealliance/preview2-shim/filesystem');
  _setPreopens({ '/': '/' });
  const { componentize } = await import('@bytecodealliance/componentize-js');
  const started = Date.now();
  const { component } = await componentize({
    sourcePath: join(dir, source),
    witPath: staged,
    worldName: world,
    disableFeatures: ['http', 'fetch-event'],
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);

  const items = await worldItems(component);
  check(items);
  await mkdir(dirname(output), { recursive: true });
  await writeFile(output, component);
  await writeFile(stampPath, `${digest}\n`);
  const mb = (component.length / (1024 * 1024)).toFixed(1);
  console.error(`${label}: wrote ${relative(process.cwd(), output)} (${mb} MiB) in ${seconds} s`);
  console.error(`${label}: imports ${items.imports.join(', ')}`);
}

/** Runs `build` as a script's main, exiting 1 with the error on failure. */
export function run(label, build) {
  build().catch((e) => {
    console.error(`${label} build failed: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
}
