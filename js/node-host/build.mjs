#!/usr/bin/env node
// Transpiles the Rust file-store component (guest/) to JavaScript with jco, for main.mjs.
//
//   node node-host/build.mjs [--component <file-store.wasm>] [--out <dir>] [--force]
//
// --component: the component to transpile; default <target>/js/file-store.wasm, which
//   `cargo run -p toolnexus --bin tnstore -- component --out target/js/file-store.wasm` writes.
// --out: where the bindings go; default <target>/js/node-host/file-store.
// <target> is $CARGO_TARGET_DIR or <repo>/target. Skipped when the output is up to date.
//
// The bindings use jco's `instantiation: 'async'` mode: the generated module imports nothing and
// exports `instantiate(getCoreModule, imports)`, so main.mjs supplies the WASI imports itself
// (preview2-shim, with the fix described in main.mjs) and the generated files can live under
// target/, away from js/node_modules.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const jsDir = resolve(here, '..');
const repo = resolve(jsDir, '..');
const targetDir = process.env.CARGO_TARGET_DIR
  ? resolve(process.env.CARGO_TARGET_DIR)
  : join(repo, 'target');

const { values: args } = parseArgs({
  options: {
    component: { type: 'string' },
    out: { type: 'string' },
    force: { type: 'boolean', default: false },
  },
});
const componentPath = resolve(args.component ?? join(targetDir, 'js/file-store.wasm'));
const out = resolve(args.out ?? join(targetDir, 'js/node-host/file-store'));
const stampPath = join(out, 'inputs.sha256');

async function main() {
  if (!existsSync(componentPath)) {
    throw new Error(
      `no component at ${componentPath}; write it with \`tnstore component --out ${componentPath}\``,
    );
  }
  const component = await readFile(componentPath);
  const hash = createHash('sha256');
  for (const input of [component, await readFile(join(here, 'build.mjs')), await readFile(join(jsDir, 'package-lock.json'))]) {
    hash.update(input);
  }
  const digest = hash.digest('hex');
  if (!args.force && existsSync(stampPath)) {
    if ((await readFile(stampPath, 'utf8')).trim() === digest) {
      console.error(`node host: ${relative(process.cwd(), out)} is up to date`);
      return;
    }
  }

  const { transpile } = await import('@bytecodealliance/jco');
  const started = Date.now();
  const { files } = await transpile(component, {
    name: 'file-store',
    instantiation: 'async',
    noTypescript: true,
    quiet: true,
  });
  await rm(out, { recursive: true, force: true });
  for (const [name, bytes] of Object.entries(files)) {
    const path = join(out, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }
  await writeFile(stampPath, `${digest}\n`);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.error(`node host: transpiled ${relative(process.cwd(), componentPath)} into ${relative(process.cwd(), out)} in ${seconds} s`);
}

main().catch((e) => {
  console.error(`node host build failed: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
