// What the echo agent does, free of any binding: plain JavaScript, driven through a `runtime`
// object so that it runs in Node's unit tests with a recorder in place of the `task` import.
// The twin of the Rust echo agent (the native `EchoAgent` and the `guest/agent-echo`
// component): the same reply, the same pieces, the same question.

/** The text that makes the echo agent ask for input once: a message starting with it. */
export const ASK_PREFIX = 'ask:';

/** The question the echo agent asks. */
export const ECHO_QUESTION = 'what should I echo?';

/** The name of the reply artifact. */
export const REPLY_ARTIFACT_NAME = 'reply';

/** Into how many pieces, at most, a reply is cut when it comes with a delay. */
export const PIECES_WITH_DELAY = 4;

/**
 * The longest sleep between two looks at `is-canceled`, in nanoseconds (50 ms): a cancel stops a
 * delayed reply within about this long, not only at the next piece.
 */
export const CANCEL_POLL_NS = 50_000_000n;

/** Nanoseconds in a millisecond. */
export const NS_PER_MS = 1_000_000n;

/** The id of the reply artifact in Task `taskId` (one per Task: a Task is echoed once). */
export function replyArtifactId(taskId) {
  return `${taskId}-reply`;
}

// Rust's `char::is_whitespace` is the Unicode `White_Space` property. JavaScript's `\s` is not
// quite (it takes U+FEFF and leaves out U+0085), and the engine inside the component has no
// `\p{White_Space}` (no Unicode property tables), so the property's characters are listed.
const WHITESPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/;

/**
 * `text` cut into at most `n` pieces at whitespace (whitespace kept with the piece before), all
 * of it; one piece when there is no whitespace. Cut where the Rust `pieces` cuts: it counts
 * UTF-8 bytes and this UTF-16 units, but only the order of the cut points matters, and every
 * whitespace character is one unit.
 */
export function pieces(text, n) {
  const words = [];
  let at = 0;
  for (const ch of text) {
    at += ch.length;
    if (WHITESPACE.test(ch) && at < text.length) words.push(at);
  }
  if (words.length === 0 || n <= 1) return [text];
  const cuts = Math.min(n, words.length + 1) - 1;
  const out = [];
  let start = 0;
  for (let k = 1; k <= cuts; k++) {
    const end = words[Math.floor((k * words.length) / (cuts + 1))];
    if (end > start) {
      out.push(text.slice(start, end));
      start = end;
    }
  }
  out.push(text.slice(start));
  return out;
}

/** The text parts of a WIT `message`, joined by newlines. */
export function textOf(message) {
  return message.parts
    .filter((part) => part.content.tag === 'text')
    .map((part) => part.content.val)
    .join('\n');
}

/**
 * A milliseconds setting (a whole number, as Rust's `u64` parse takes it) as a BigInt, or a
 * thrown message naming the setting and the value.
 */
export function parseMillis(name, value) {
  const digits = value.trim();
  if (/^\+?[0-9]+$/.test(digits)) {
    const ms = BigInt(digits);
    if (ms <= 0xffff_ffff_ffff_ffffn) return ms;
  }
  throw new Error(`${name} must be a whole number of milliseconds, not ${JSON.stringify(value)}`);
}

/** Why a run stops before its end: the Task was canceled, or the runtime refused an update. */
export class Halt extends Error {
  /** @param {string | null} why `null` for a stop (canceled), else the status message. */
  constructor(why) {
    super(why ?? 'stopped');
    this.why = why;
  }
}

/**
 * Echoes `text` (the message's text parts joined by newlines): at once as one artifact update,
 * or with `delayNs` (a BigInt, nanoseconds) in up to PIECES_WITH_DELAY pieces cut at whitespace,
 * each after its share of the delay (to the nanosecond, as the Rust agents divide it). A text
 * starting with ASK_PREFIX asks ECHO_QUESTION instead.
 *
 * `runtime`: `emit({ text, append, lastChunk })` (throws a `Halt` when refused),
 * `isCanceled()`, `sleep(ns)` (a BigInt).
 *
 * Returns `{ ending: 'completed' }`, `{ ending: 'input-required', question }`,
 * `{ ending: 'canceled' }` or `{ ending: 'failed', why }`.
 */
export function echo(text, delayNs, runtime) {
  if (text.startsWith(ASK_PREFIX)) return { ending: 'input-required', question: ECHO_QUESTION };
  try {
    emitReply(text, delayNs, runtime);
    return { ending: 'completed' };
  } catch (e) {
    if (!(e instanceof Halt)) throw e;
    return e.why === null ? { ending: 'canceled' } : { ending: 'failed', why: e.why };
  }
}

function emitReply(text, delayNs, runtime) {
  const parts = pieces(text, delayNs === 0n ? 1 : PIECES_WITH_DELAY);
  const pause = delayNs / BigInt(parts.length);
  parts.forEach((piece, i) => {
    wait(runtime, pause);
    runtime.emit({ text: piece, append: i > 0, lastChunk: i + 1 === parts.length });
  });
}

/**
 * Sleeps `pauseNs` (a BigInt) in slices of at most CANCEL_POLL_NS, looking at `isCanceled`
 * before each slice and at the end: a stop `Halt` as soon as the Task is canceled.
 */
export function wait(runtime, pauseNs) {
  let left = pauseNs;
  for (;;) {
    if (runtime.isCanceled()) throw new Halt(null);
    if (left === 0n) return;
    const slice = left < CANCEL_POLL_NS ? left : CANCEL_POLL_NS;
    runtime.sleep(slice);
    left -= slice;
  }
}
