// The toolnexus file store in JavaScript: a component of the `full-push-task-store` world
// (wit/task-store.wit, `toolnexus:task-store@0.4.0`), built with componentize-js by ../build.mjs.
//
// It keeps one JSON file per Task in the directory the host preopens at `/`, with its version
// record and (while saving) its lock, in exactly the format of the Rust file store
// (docs/on-disk-format.md), so either store can open a directory the other wrote and both can
// write it at once. Per-instance memory holds only settings (durability, lock lease) and the
// directory handle; every Task and push config lives on disk, because the host pools several instances and calls
// them concurrently.
//
// WIT values: `u64` is a BigInt; `option<T>` is `undefined` or the value; a variant is
// `{ tag, val }`; an `err` is thrown.

import { DirStore } from './dir.js';
import { deletePushConfig, getPushConfig, listPushConfigs, savePushConfig } from './push.js';
import {
  DEFAULT_LOCK_LEASE_MS,
  MAX_LOCK_LEASE_MS,
  MIN_LOCK_LEASE_MS,
  StoreError,
} from './format.js';

/** Set by `configure(durability=relaxed)`; full durability until then. */
let relaxed = false;
/** Set by `configure(lock-lease-ms=…)`. */
let leaseMs = DEFAULT_LOCK_LEASE_MS;

function dirStore() {
  return new DirStore(!relaxed, leaseMs);
}

/** The WIT `store-error` for a `StoreError`. */
function toWit(e) {
  if (e.tag === 'conflict') {
    return { tag: 'conflict', val: { current: e.current ?? undefined, message: e.message } };
  }
  return { tag: e.tag, val: e.message };
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
    if (e instanceof StoreError) throw toWit(e);
    throw { tag: 'other', val: `javascript store failed: ${e && e.stack ? e.stack : e}` };
  }
}

export const store = {
  get(id) {
    return call(() => {
      const found = dirStore().get(id);
      return found === null ? undefined : { task: found.text, version: found.version };
    });
  },
  save(task, condition) {
    return call(() => dirStore().save(task, condition));
  },
};

export const catalog = {
  list(query) {
    return call(() => {
      const page = dirStore().list(query);
      return {
        tasks: page.tasks,
        nextPageToken: page.nextPageToken ?? undefined,
        totalSize: page.totalSize,
      };
    });
  },
  delete(id) {
    return call(() => dirStore().delete(id));
  },
};

/**
 * A push-config call: as `call`, after the instance's sweep (a `DirStore`'s first construction
 * clears crashed writers' temp files, push configs' included), whichever call comes first.
 */
function pushCall(body) {
  return call(() => {
    dirStore();
    return body();
  });
}

export const pushConfigs = {
  set(taskId, config) {
    pushCall(() => savePushConfig(taskId, config, !relaxed));
  },
  get(taskId, configId) {
    return pushCall(() => getPushConfig(taskId, configId) ?? undefined);
  },
  list(taskId) {
    return pushCall(() => listPushConfigs(taskId));
  },
  delete(taskId, configId) {
    return pushCall(() => deletePushConfig(taskId, configId, !relaxed));
  },
};

export const config = {
  configure(settings) {
    // Checked in full before anything changes: a refused call leaves the settings as they were.
    let nextRelaxed = relaxed;
    let nextLease = leaseMs;
    for (const [name, value] of settings) {
      if (name === 'durability') {
        if (value === 'full') nextRelaxed = false;
        else if (value === 'relaxed') nextRelaxed = true;
        else throw `durability must be full or relaxed, not ${JSON.stringify(value)}`;
      } else if (name === 'lock-lease-ms') {
        const ms = /^\+?[0-9]+$/.test(value) ? Number(value) : NaN;
        if (!(ms >= MIN_LOCK_LEASE_MS && ms <= MAX_LOCK_LEASE_MS)) {
          throw `lock-lease-ms must be a whole number of milliseconds from ${MIN_LOCK_LEASE_MS} to ${MAX_LOCK_LEASE_MS}, not ${JSON.stringify(value)}`;
        }
        nextLease = ms;
      }
      // Unknown names are ignored, as the contract says.
    }
    relaxed = nextRelaxed;
    leaseMs = nextLease;
  },
};
