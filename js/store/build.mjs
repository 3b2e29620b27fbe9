#!/usr/bin/env node
// Builds the JavaScript task-store component with componentize-js (the steps, the skip when
// nothing changed and the options `--out <file.wasm>` and `--force`: `../build-component.mjs`).
//
//   node store/build.mjs [--out <file.wasm>] [--force]
//
// Default output: <repo>/target/js/store/toolnexus-js-store.wasm (or under $CARGO_TARGET_DIR).
// src/index.js against world `js-file-store` (wit/world.wit), the contract wit/task-store.wit.
// The result may import only `wasi:` interfaces (the host grants nothing else) and must export
// the task-store interfaces.

import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildComponent, run } from '../build-component.mjs';

run('js store', () =>
  buildComponent({
    label: 'js store',
    dir: dirname(fileURLToPath(import.meta.url)),
    source: 'src/index.js',
    world: 'js-file-store',
    contract: { file: 'wit/task-store.wit', dep: 'task-store' },
    wasi: ['wasi-filesystem', 'wasi-io', 'wasi-clocks'],
    out: 'js/store/toolnexus-js-store.wasm',
    check({ imports, exports }) {
      const foreign = imports.filter((name) => !name.startsWith('wasi:'));
      if (foreign.length > 0) {
        throw new Error(`the component imports non-WASI interfaces: ${foreign.join(', ')}`);
      }
      for (const wanted of ['store', 'config', 'catalog', 'push-configs']) {
        if (!exports.some((name) => name.startsWith(`toolnexus:task-store/${wanted}@`))) {
          throw new Error(`the component does not export toolnexus:task-store/${wanted}`);
        }
      }
    },
  }),
);
