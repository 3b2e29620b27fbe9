// `node --import ./store/test-support/wasi-register.mjs …` (or an import of this module before any
// import of `../src/dir.js`): maps the store's `wasi:` imports onto preview2-shim.
import * as nodeModule from 'node:module';

if (typeof nodeModule.register !== 'function') {
  throw new Error(`the store tests need module.register (Node.js 20.6 or later), not ${process.version}`);
}
nodeModule.register('./wasi-hooks.mjs', import.meta.url);
