#!/usr/bin/env node
// Builds the echo agent in JavaScript as a component with componentize-js (the steps, the skip
// when nothing changed and the options `--out <file.wasm>` and `--force`:
// `../build-component.mjs`).
//
//   node agent/build.mjs [--out <file.wasm>] [--force]
//
// Default output: <repo>/target/js/agent/toolnexus-js-agent.wasm (or under $CARGO_TARGET_DIR).
// src/agent.js against world `js-agent` (wit/world.wit), the contract wit/a2a/agent.wit. The
// result may import only `wasi:` interfaces and `toolnexus:a2a/task` (and `types`), and must
// export the `agent` and `config` interfaces.

import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildComponent, run } from '../build-component.mjs';

run('js agent', () =>
  buildComponent({
    label: 'js agent',
    dir: dirname(fileURLToPath(import.meta.url)),
    source: 'src/agent.js',
    world: 'js-agent',
    contract: { file: 'wit/a2a/agent.wit', dep: 'a2a' },
    wasi: ['wasi-io', 'wasi-clocks'],
    out: 'js/agent/toolnexus-js-agent.wasm',
    check({ imports, exports }) {
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
    },
  }),
);
