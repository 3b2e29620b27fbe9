// A Task's push-notification configs (contract 0.3, `push-configs`), in exactly the files of the
// Rust store (`shared/format/src/dir/push.rs`; docs/on-disk-format.md, "Push-notification
// configs"):
//
// - `.push/<S(T)>/`: the configs of the Task `T`, where `S(T)` is `T`'s Task file name without
//   `.json`;
// - `.push/<S(T)>/<S(C)>.json`: its config `C`, the JSON text exactly as given, only ever
//   replaced by renaming a complete, flushed temp file (`.tmp-<32 hex>`, in the same directory)
//   over it.
//
// Configs have no versions and no locks: the last rename wins, and a reader sees a whole config.

import {
  EXTENSION,
  STALE_TEMP_AGE_MS,
  StoreError,
  compareIds,
  encodeId,
  isTaskFileName,
  parseTask,
  utf8,
} from './format.js';
import {
  ROOT,
  dirEntries,
  errorCode,
  inDir,
  ioError,
  readCapped,
  removeIfStaleTemp,
  renameInto,
  root,
  syncDir,
  writeTemp,
} from './wasi.js';

/** The directory, in the root, that holds every Task's configs. */
export const PUSH_DIR = '.push';

/** The longest push config, in bytes of JSON text (UTF-8). A config file over it is corrupt. */
export const MAX_PUSH_CONFIG_BYTES = 64 * 1024;

/**
 * How many times a save makes its Task's config directory again when a concurrent delete of the
 * Task removed it between its creation and the temp file's.
 */
const SAVE_ATTEMPTS = 3;

/**
 * The id of the push config in `text`: a JSON object whose `id` is a non-empty string, at most
 * `MAX_PUSH_CONFIG_BYTES` (checked first, so nothing larger is parsed). Throws an `Error` saying
 * what is wrong, in the words of the Rust check.
 */
export function parsePushConfig(text) {
  const len = utf8(text).length;
  if (len > MAX_PUSH_CONFIG_BYTES) {
    throw new Error(`push config is ${len} bytes of JSON, over the limit of ${MAX_PUSH_CONFIG_BYTES}`);
  }
  try {
    return parseTask(text).id;
  } catch (e) {
    // The same shape rule as a Task's, said of a config.
    throw new Error(String(e.message).replace(/^task /, 'push config '));
  }
}

function corrupt(name, reason) {
  return new StoreError('corrupt', `corrupt push config file ${ROOT}${name}: ${reason}`);
}

function tooLarge(size) {
  return `is ${size} bytes, over the largest push config (${MAX_PUSH_CONFIG_BYTES} bytes)`;
}

/** `.push/<S(T)>`: the config directory of the Task `taskId` (`invalid-input` if it is empty). */
function pushDirOf(taskId) {
  return `${PUSH_DIR}/${encodeId(taskId).slice(0, -EXTENSION.length)}`;
}

/** The config file of `configId` in the config directory `dir`. */
function configFile(dir, configId) {
  if (configId === '') throw new StoreError('invalid-input', 'push config id is empty');
  return `${dir}/${encodeId(configId)}`;
}

/** The id the config file `name` holds, checked: anything else is corrupt. */
function storedId(name, text) {
  try {
    return parsePushConfig(text);
  } catch (e) {
    throw corrupt(name, e.message);
  }
}

/** Makes `path` if it is missing: whether it was made here (its entry then needs a flush). */
function makeDir(path) {
  try {
    root().createDirectoryAt(path);
    return true;
  } catch (e) {
    if (errorCode(e) === 'exist') return false;
    throw ioError('create directory', path, e);
  }
}

/**
 * Saves the push config `text` of the Task `taskId`, replacing the one with its id. `text` is
 * checked (`invalid-input` if it is not a config), then written exactly as given.
 */
export function savePushConfig(taskId, text, durable) {
  if (taskId === '') throw new StoreError('invalid-input', 'task id is empty');
  let configId;
  try {
    configId = parsePushConfig(text);
  } catch (e) {
    throw new StoreError('invalid-input', e.message);
  }
  const dir = pushDirOf(taskId);
  const file = configFile(dir, configId);
  const bytes = utf8(text);
  for (let attempt = 1; ; attempt++) {
    const madePush = makeDir(PUSH_DIR);
    const madeDir = makeDir(dir);
    let temp;
    try {
      temp = writeTemp(bytes, durable, dir);
    } catch (e) {
      // The Task was deleted, its directory with it, since `makeDir`: a save after a delete
      // keeps its config, so this one does too.
      if (attempt < SAVE_ATTEMPTS && e.code === 'no-entry') continue;
      throw e;
    }
    try {
      renameInto(temp.name, file);
    } catch (e) {
      try {
        root().unlinkFileAt(temp.name);
      } catch {
        // Hidden, and swept later.
      }
      throw e;
    }
    if (durable) {
      syncDir(dir);
      // A directory made here is an entry of its parents: flushed too, up to the root.
      if (madeDir || madePush) {
        syncDir(PUSH_DIR);
        syncDir();
      }
    }
    return;
  }
}

/** The config `configId` of the Task `taskId` as its text, or `null`; a foreign file is corrupt. */
export function getPushConfig(taskId, configId) {
  const file = configFile(pushDirOf(taskId), configId);
  const found = readCapped(file, MAX_PUSH_CONFIG_BYTES, { corrupt, tooLarge });
  if (found === null) return null;
  const stored = storedId(file, found.text);
  if (stored !== configId) {
    throw corrupt(file, `holds push config ${JSON.stringify(stored)}, not ${JSON.stringify(configId)}`);
  }
  return found.text;
}

/**
 * Every config of the Task `taskId` as text, by config id (UTF-8 bytes, ascending); empty when
 * it has none. Hidden names (temp files) and names that are not `<name>.json` are skipped; a
 * config file that is not the config its name says fails the listing, naming it.
 */
export function listPushConfigs(taskId) {
  const dir = pushDirOf(taskId);
  const configs = [];
  for (const { name } of dirEntries(dir) ?? []) {
    if (!isTaskFileName(name)) continue;
    const file = inDir(dir, name);
    const found = readCapped(file, MAX_PUSH_CONFIG_BYTES, { corrupt, tooLarge });
    if (found === null) continue; // deleted meanwhile
    const id = storedId(file, found.text);
    if (encodeId(id) !== name) {
      throw corrupt(file, `holds push config ${JSON.stringify(id)}, which belongs in another file`);
    }
    configs.push({ id, text: found.text });
  }
  configs.sort((a, b) => compareIds(a.id, b.id));
  return configs.map((config) => config.text);
}

/** Removes the config `configId` of the Task `taskId`: `true` if there was one. */
export function deletePushConfig(taskId, configId, durable) {
  const dir = pushDirOf(taskId);
  const file = configFile(dir, configId);
  try {
    root().unlinkFileAt(file);
  } catch (e) {
    if (errorCode(e) === 'no-entry') return false;
    throw ioError('delete', file, e);
  }
  if (durable) syncDir(dir);
  return true;
}

/**
 * Removes every config of the Task `taskId`, with its directory (after the Task's own files are
 * gone). A file a concurrent save adds while it is being emptied is removed on the next pass.
 */
export function deletePushConfigs(taskId, durable) {
  const dir = pushDirOf(taskId);
  for (let attempt = 1; ; attempt++) {
    try {
      if (!removeTree(dir)) return;
      break;
    } catch (e) {
      if (attempt >= SAVE_ATTEMPTS) throw e;
    }
  }
  if (durable) syncDir(PUSH_DIR);
}

/** Removes the directory `path` and everything in it: whether it existed. Never through a link. */
function removeTree(path) {
  const entries = dirEntries(path);
  if (entries === null) return false;
  for (const { name, type } of entries) {
    const inner = inDir(path, name);
    if (type === 'directory') {
      removeTree(inner);
      continue;
    }
    try {
      root().unlinkFileAt(inner);
    } catch (e) {
      if (errorCode(e) !== 'no-entry') throw ioError('delete', inner, e);
    }
  }
  try {
    root().removeDirectoryAt(path);
  } catch (e) {
    if (errorCode(e) === 'no-entry') return true;
    throw ioError('delete', path, e);
  }
  return true;
}

/**
 * Removes the temp files of crashed writers (last changed `STALE_TEMP_AGE_MS` before `nowMs` or
 * earlier) in every Task's config directory. Errors are ignored: this is housekeeping.
 */
export function sweepPushTemps(nowMs) {
  let dirs;
  try {
    dirs = dirEntries(PUSH_DIR) ?? [];
  } catch {
    return;
  }
  for (const { name, type } of dirs) {
    // Only the store's own directories are swept, never through a link.
    if (type !== 'directory') continue;
    const dir = inDir(PUSH_DIR, name);
    let entries;
    try {
      entries = dirEntries(dir) ?? [];
    } catch {
      continue;
    }
    for (const entry of entries) removeIfStaleTemp(inDir(dir, entry.name), nowMs, STALE_TEMP_AGE_MS);
  }
}
