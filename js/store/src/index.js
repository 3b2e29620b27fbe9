// The toolnexus file store in JavaScript: a component of the `full-task-store` world
// (wit/task-store.wit), built with componentize-js by ../build.mjs.
//
// It keeps one JSON file per Task in the directory the host preopens at `/`, in exactly the
// format of the Rust file store (docs/on-disk-format.md), so either store can open a directory
// the other wrote. Per-instance memory holds only settings (durability) and the directory
// handle; every Task lives on disk, because the host pools several instances and calls them
// concurrently.

import { DirStore } from './dir.js';
import { StoreError } from './format.js';

/** Set by `configure(durability=relaxed)`; full durability until then. */
let relaxed = false;

function dirStore() {
  return new DirStore(!relaxed);
}

/**
 * Runs `body`, turning failures into the WIT `store-error` variant (componentize-js sends a
 * thrown non-Error value back as the `err` of the `result`). A bug (any other exception) becomes
 * `other` with its message rather than a trap, so the host can say what happened.
 */
function call(body) {
  try {
    return body();
  } catch (e) {
    if (e instanceof StoreError) throw { tag: e.tag, val: e.message };
    throw { tag: 'other', val: `javascript store failed: ${e && e.stack ? e.stack : e}` };
  }
}

export const store = {
  get(id) {
    return call(() => dirStore().getText(id) ?? undefined);
  },
  save(task) {
    return call(() => dirStore().saveText(task));
  },
};

export const catalog = {
  list(query) {
    return call(() => dirStore().list(query));
  },
  delete(id) {
    return call(() => dirStore().delete(id));
  },
};

export const config = {
  configure(settings) {
    for (const [name, value] of settings) {
      if (name !== 'durability') continue; // unknown names are ignored, as the contract says
      if (value === 'full') relaxed = false;
      else if (value === 'relaxed') relaxed = true;
      else throw `durability must be full or relaxed, not ${JSON.stringify(value)}`;
    }
  },
};
