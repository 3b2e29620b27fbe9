// Module hooks that let Node import the store's sources (`../src/dir.js`) outside the component:
// each `wasi:` import the component gets from its host resolves to the same interface of
// @bytecodealliance/preview2-shim, which implements WASI 0.2 on Node's `fs`. Registered by
// `wasi-register.mjs`; used by the directory tests (`test/dir.test.mjs`, `race-writer.mjs`).

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const shim = (name) => pathToFileURL(require.resolve(`@bytecodealliance/preview2-shim/${name}`)).href;

/** Source of a module exporting one WASI interface's functions from preview2-shim. */
const INTERFACES = {
  'wasi:filesystem/preopens': () =>
    `import { preopens } from ${JSON.stringify(shim('filesystem'))};\n` +
    'export const getDirectories = (...a) => preopens.getDirectories(...a);\n',
  'wasi:filesystem/types': () =>
    `import { types } from ${JSON.stringify(shim('filesystem'))};\n` +
    'export const { Descriptor, DirectoryEntryStream, filesystemErrorCode } = types;\n',
  'wasi:clocks/monotonic-clock': () =>
    `import { monotonicClock } from ${JSON.stringify(shim('clocks'))};\n` +
    'export const now = () => monotonicClock.now();\n' +
    'export const resolution = () => monotonicClock.resolution();\n' +
    'export const subscribeDuration = (d) => monotonicClock.subscribeDuration(d);\n' +
    'export const subscribeInstant = (i) => monotonicClock.subscribeInstant(i);\n',
};

/** `../src/index.js?instance=N`: a module graph of its own, like a new component instance. */
const INSTANCE = /\?instance=[0-9]+$/;

export async function resolve(specifier, context, next) {
  const instance = context.parentURL && INSTANCE.exec(context.parentURL);
  if (instance && specifier.startsWith('.')) {
    const resolved = await next(specifier, context);
    return { ...resolved, url: resolved.url + instance[0] };
  }
  if (specifier.startsWith('wasi:')) {
    const iface = specifier.replace(/@[^@]*$/, '');
    if (!(iface in INTERFACES)) throw new Error(`no preview2-shim mapping for ${specifier}`);
    return { url: `wasi-shim:${iface}`, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.startsWith('wasi-shim:')) {
    const iface = url.slice('wasi-shim:'.length);
    return { format: 'module', source: INTERFACES[iface](), shortCircuit: true };
  }
  return next(url, context);
}
