// The echo agent in JavaScript: a component of the `configurable-agent` world of the agent
// contract (wit/a2a/agent.wit, `toolnexus:a2a@0.1.0`), built with componentize-js by
// ../build.mjs. What it does is in ./echo.js; this file maps the contract's values in and out.
//
// - `handle(request)` echoes the text parts of the message as the artifact `<task-id>-reply`
//   (named `reply`) and ends `completed`; `ask:` ends `input-required` with a question; with the
//   setting `delay-ms` the reply comes in up to four pieces spread over the delay.
// - `cancel(taskId, contextId)` has nothing to release.
// - `configure(settings)` takes `delay-ms` and ignores other names.
//
// WIT values as componentize-js gives them: records are objects with camelCase members,
// `option<T>` is `undefined` or the value, a variant is `{ tag, val }`, `u64` a BigInt, and a
// `result` error of an import arrives as a thrown `ComponentError` whose `payload` is the error
// value (here an `emit-error` variant).
//
// The instance keeps only the setting between calls (the contract forbids Task state there: a
// later message may reach another instance).

import { isCanceled, updateArtifact } from 'toolnexus:a2a/task@0.1.0';
import { subscribeDuration } from 'wasi:clocks/monotonic-clock@0.2.12';
import {
  Halt,
  NS_PER_MS,
  REPLY_ARTIFACT_NAME,
  echo,
  parseMillis,
  replyArtifactId,
  textOf,
} from './echo.js';

const dispose = Symbol.dispose || Symbol.for('dispose');

/** Set by `configure(delay-ms=…)`, in nanoseconds: configuration, the same in every instance. */
let delayNs = 0n;

/** The `emit-error` a failed `task` call carries, or `null` for any other exception. */
export function emitErrorOf(e) {
  const value = e !== null && typeof e === 'object' && 'payload' in e ? e.payload : e;
  const isVariant = value !== null && typeof value === 'object' && typeof value.tag === 'string';
  return isVariant ? value : null;
}

/** What the echo logic makes of a refused update: a stop, or the status message of a failure. */
function halt(error) {
  switch (error.tag) {
    case 'stopped':
      return new Halt(null);
    case 'invalid':
      return new Halt(`the reply was refused: ${error.val}`);
    case 'limit':
      return new Halt(`the reply is over a limit: ${error.val}`);
    default:
      return new Halt(`the reply could not be saved: ${error.val}`);
  }
}

/** Sleeps on a `wasi:clocks` pollable: the instance waits in the host, no busy loop. */
function sleep(ns) {
  const pollable = subscribeDuration(ns);
  try {
    pollable.block();
  } finally {
    if (typeof pollable[dispose] === 'function') pollable[dispose]();
  }
}

function textPart(text) {
  return {
    content: { tag: 'text', val: text },
    mediaType: undefined,
    filename: undefined,
    metadata: undefined,
  };
}

/** An agent message of one text part (the runtime gives it its id). */
function said(text) {
  return {
    messageId: undefined,
    role: 'agent',
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The echo logic's runtime over the `task` import, for one run. */
function taskRuntime(artifactId) {
  return {
    emit({ text, append, lastChunk }) {
      const artifact = {
        artifactId,
        name: REPLY_ARTIFACT_NAME,
        description: undefined,
        parts: [textPart(text)],
        metadata: undefined,
        extensions: [],
      };
      try {
        updateArtifact(artifact, append, lastChunk);
      } catch (e) {
        const error = emitErrorOf(e);
        if (error === null) throw e;
        throw halt(error);
      }
    },
    isCanceled,
    sleep,
  };
}

export const agent = {
  handle(request) {
    const runtime = taskRuntime(replyArtifactId(request.taskId));
    const run = echo(textOf(request.message), delayNs, runtime);
    switch (run.ending) {
      case 'completed':
        return { tag: 'completed', val: undefined };
      case 'input-required':
        return { tag: 'input-required', val: said(run.question) };
      case 'canceled':
        // Ignored by the runtime (the Task is already canceled or ended).
        return { tag: 'canceled', val: undefined };
      default:
        return { tag: 'failed', val: said(run.why) };
    }
  },

  cancel(_taskId, _contextId) {},
};

export const config = {
  configure(settings) {
    for (const [name, value] of settings) {
      if (name !== 'delay-ms') continue;
      try {
        delayNs = parseMillis(name, value) * NS_PER_MS;
      } catch (e) {
        // componentize-js sends a thrown value back as the `err` of the `result`.
        throw e.message;
      }
    }
  },
};
