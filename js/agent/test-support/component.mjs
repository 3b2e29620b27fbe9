// The built agent component, run in Node for the tests: built by ../build.mjs (skipped when up
// to date), transpiled by jco into a temp directory, instantiated with preview2-shim for its
// WASI imports and a fake `toolnexus:a2a/task` that records what the agent emits.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transpile } from '@bytecodealliance/jco';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';

const here = dirname(fileURLToPath(import.meta.url));
const jsDir = resolve(here, '../..');
const repo = resolve(jsDir, '..');
const targetDir = process.env.CARGO_TARGET_DIR
  ? resolve(process.env.CARGO_TARGET_DIR)
  : join(repo, 'target');

/** Builds the component (if stale) and transpiles it; returns `instance(task)`. */
export async function loadAgentComponent() {
  const wasm = join(targetDir, 'js/agent/toolnexus-js-agent.wasm');
  execFileSync(process.execPath, [join(jsDir, 'agent/build.mjs'), '--out', wasm], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const bindings = mkdtempSync(join(tmpdir(), 'js-agent-'));
  const { files } = await transpile(await readFile(wasm), {
    name: 'agent',
    instantiation: 'async',
    noTypescript: true,
    quiet: true,
  });
  for (const [name, bytes] of Object.entries(files)) {
    const path = join(bindings, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }
  const { instantiate } = await import(pathToFileURL(join(bindings, 'agent.js')).href);
  const modules = new Map();
  const coreModule = async (name) => {
    if (!modules.has(name)) {
      modules.set(name, await WebAssembly.compile(await readFile(join(bindings, name))));
    }
    return modules.get(name);
  };
  return {
    /** A fresh instance whose `task` import is `task`: `{ agent, config }`. */
    async instance(task) {
      const shim = new WASIShim({
        sandbox: { preopens: {}, env: {}, args: [], enableNetwork: false },
      });
      const component = await instantiate(coreModule, {
        ...shim.getImportObject(),
        'toolnexus:a2a/task': task,
      });
      return {
        agent: component['toolnexus:a2a/agent@0.1.0'] ?? component.agent,
        config: component['toolnexus:a2a/config@0.1.0'] ?? component.config,
      };
    },
    close() {
      rmSync(bindings, { recursive: true, force: true });
    },
  };
}

/**
 * A fake `task` interface: records every update with the time it came; `refuse(n)` answers the
 * n-th artifact update (0-based) with an `emit-error`, `canceledAfter` makes `isCanceled` true
 * once that many updates were taken.
 */
export function fakeTask({ refuse = () => undefined, canceledAfter } = {}) {
  const fake = {
    artifacts: [],
    statuses: [],
    canceledLooks: 0,
    updateStatus(message) {
      fake.statuses.push(message);
    },
    updateArtifact(artifact, append, lastChunk) {
      const error = refuse(fake.artifacts.length);
      // jco sends a thrown non-Error value back to the guest as the `err` of the `result`.
      if (error !== undefined) throw error;
      fake.artifacts.push({ artifact, append, lastChunk, at: performance.now() });
    },
    isCanceled() {
      fake.canceledLooks += 1;
      return canceledAfter !== undefined && fake.artifacts.length >= canceledAfter;
    },
  };
  return fake;
}

/** A WIT `request` for a user message of these parts. */
export function request(taskId, parts, { continued = false } = {}) {
  return {
    taskId,
    contextId: `${taskId}-context`,
    continued,
    message: {
      messageId: `${taskId}-message`,
      role: 'user',
      parts: parts.map((content) => ({
        content,
        mediaType: undefined,
        filename: undefined,
        metadata: undefined,
      })),
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    history: [],
    metadata: undefined,
    acceptedOutputModes: [],
    owner: undefined,
    tenant: undefined,
    extensions: [],
  };
}

/** A text part's content. */
export const text = (val) => ({ tag: 'text', val });
