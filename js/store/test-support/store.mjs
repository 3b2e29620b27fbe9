// The store's sources run in Node over a real directory, for the directory tests: each
// `openInstance` loads its own copy of `src/index.js` and `src/dir.js` (module state and all),
// like a new component instance, with preview2-shim as its WASI and `dir` preopened at `/`.

import './wasi-register.mjs';
import { _setPreopens } from '@bytecodealliance/preview2-shim/filesystem';

let instances = 0;

/**
 * A new instance over `dir`: `{ store, catalog, config, pushConfigs, DirStore }` — the WIT
 * exports exactly as the component exports them, and the directory class for the lock internals. Its first call
 * sweeps the directory, as a component instance's does.
 */
export async function openInstance(dir, settings = []) {
  const n = instances++;
  _setPreopens({ '/': dir });
  const exports = await import(`../src/index.js?instance=${n}`);
  const { DirStore } = await import(`../src/dir.js?instance=${n}`);
  exports.config.configure(settings);
  // Look the preopen up now, before another instance changes the shim's preopens.
  new DirStore(true);
  return {
    store: exports.store,
    catalog: exports.catalog,
    config: exports.config,
    pushConfigs: exports.pushConfigs,
    DirStore,
  };
}

/** Runs a WIT call, returning `{ ok }` or `{ err }` (the thrown `store-error`). */
export function attempt(body) {
  try {
    return { ok: body() };
  } catch (e) {
    if (e && typeof e === 'object' && 'tag' in e) return { err: e };
    throw e;
  }
}
