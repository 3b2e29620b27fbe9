// Unit tests of the echo agent's logic (src/echo.js), run under Node: `npm test` (or
// `node --test agent/test/`). The component build runs the same module inside StarlingMonkey;
// these cases are the Rust echo agents' own (host/protocol's `EchoAgent`, guest/agent-echo).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CANCEL_POLL_NS,
  ECHO_QUESTION,
  Halt,
  echo,
  parseMillis,
  pieces,
  replyArtifactId,
  textOf,
} from '../src/echo.js';

const MS = 1_000_000n;

/** Records what a run does, on a virtual clock (the Rust tests' `Recorder`). */
function recorder({ cancelAfter, refuseFrom, refusal = { why: null } } = {}) {
  const r = {
    emitted: [],
    slept: 0n,
    emit(piece) {
      if (refuseFrom !== undefined && r.emitted.length >= refuseFrom) throw new Halt(refusal.why);
      r.emitted.push([piece.text, piece.append, piece.lastChunk]);
    },
    isCanceled() {
      return cancelAfter !== undefined && r.emitted.length >= cancelAfter;
    },
    sleep(ns) {
      assert.ok(ns <= CANCEL_POLL_NS, `slept ${ns} ns without looking at cancels`);
      r.slept += ns;
    },
  };
  return r;
}

test('pieces cover the text (the Rust cases)', () => {
  for (const text of ['', 'one', 'one two', 'a b c d e f g h', 'x  y\nz é ü']) {
    for (let n = 1; n < 6; n++) {
      const p = pieces(text, n);
      assert.ok(p.length <= Math.max(n, 1), `${JSON.stringify(text)} ${n} ${JSON.stringify(p)}`);
      assert.equal(p.join(''), text, `${n}`);
    }
  }
  assert.deepEqual(pieces('a b c d e f g h', 4), ['a b ', 'c d ', 'e f ', 'g h']);
  assert.equal(pieces('a b c d e f g h', 4).length, 4);
  assert.deepEqual(pieces('nowhitespace', 4), ['nowhitespace']);
});

test('pieces cut where the Rust cut lands, whatever the characters', () => {
  // Expected values printed by the Rust `pieces` for the same inputs.
  const cases = [
    ['x  y\nz é ü', 4, ['x  ', 'y\n', 'z ', 'é ü']],
    ['one two ', 4, ['one ', 'two ']],
    ['a\u00a0b\u3000c\u0085d', 4, ['a\u00a0', 'b\u3000', 'c\u0085', 'd']],
    // U+FEFF is `\s` in JavaScript but not whitespace in Rust: no cut.
    ['a\ufeffb', 4, ['a\ufeffb']],
    // Astral characters: two UTF-16 units, four UTF-8 bytes; the cuts are the same.
    ['😀 😀 😀 😀 😀', 4, ['😀 😀 ', '😀 ', '😀 ', '😀']],
    ['a b c', 1, ['a b c']],
    ['a b c', 0, ['a b c']],
    ['a b c d e f g h i j k', 4, ['a b c ', 'd e f ', 'g h ', 'i j k']],
    ['a b c d e f', 4, ['a b ', 'c ', 'd ', 'e f']],
  ];
  for (const [text, n, expected] of cases) {
    assert.deepEqual(pieces(text, n), expected, `${JSON.stringify(text)} ${n}`);
  }
});

test("the listed whitespace is exactly Unicode's White_Space", () => {
  const mismatched = [];
  for (let c = 0; c < 0x3100; c++) {
    const ch = String.fromCodePoint(c);
    const cut = pieces(`a${ch}b`, 2).length === 2;
    if (cut !== /\p{White_Space}/u.test(ch)) mismatched.push(c.toString(16));
  }
  assert.deepEqual(mismatched, []);
});

test('without a delay the reply is one last chunk', () => {
  const r = recorder();
  assert.deepEqual(echo('hello there', 0n, r), { ending: 'completed' });
  assert.deepEqual(r.emitted, [['hello there', false, true]]);
  assert.equal(r.slept, 0n);
});

test('with a delay four pieces spread over it', () => {
  const r = recorder();
  const delay = 400n * MS;
  assert.deepEqual(echo('a b c d e f g h', delay, r), { ending: 'completed' });
  assert.deepEqual(
    r.emitted.map(([, append, last]) => [append, last]),
    [
      [false, false],
      [true, false],
      [true, false],
      [true, true],
    ],
  );
  assert.equal(r.emitted.map(([text]) => text).join(''), 'a b c d e f g h');
  assert.equal(r.slept, delay);
});

test('a delay that does not divide evenly is split to the nanosecond', () => {
  const r = recorder();
  assert.deepEqual(echo('a b c', 100n * MS, r), { ending: 'completed' });
  assert.equal(r.emitted.length, 3);
  assert.equal(r.slept, 3n * ((100n * MS) / 3n));
});

test('a delayed word is one piece', () => {
  const r = recorder();
  assert.deepEqual(echo('word', 120n * MS, r), { ending: 'completed' });
  assert.deepEqual(r.emitted, [['word', false, true]]);
  assert.equal(r.slept, 120n * MS);
});

test('ask: asks and emits nothing', () => {
  const r = recorder();
  assert.deepEqual(echo('ask: anything', 1000n * MS, r), {
    ending: 'input-required',
    question: ECHO_QUESTION,
  });
  assert.deepEqual(r.emitted, []);
  assert.equal(r.slept, 0n);
});

test('a cancel stops between pieces', () => {
  const r = recorder({ cancelAfter: 1 });
  assert.deepEqual(echo('a b c d e f g h', 400n * MS, r), { ending: 'canceled' });
  assert.equal(r.emitted.length, 1);
  // Noticed before sleeping the next piece's share.
  assert.equal(r.slept, 100n * MS);
});

test('a stopped update stops the reply', () => {
  const r = recorder({ refuseFrom: 2 });
  assert.deepEqual(echo('a b c d e f g h', 40n * MS, r), { ending: 'canceled' });
  assert.equal(r.emitted.length, 2);
});

test('a refused update fails the run with the reason', () => {
  const r = recorder({ refuseFrom: 0, refusal: { why: 'the reply is over a limit: 10 bytes' } });
  assert.deepEqual(echo('hello', 0n, r), {
    ending: 'failed',
    why: 'the reply is over a limit: 10 bytes',
  });
});

test('the text of a message is its text parts joined by newlines', () => {
  const part = (tag, val) => ({ content: { tag, val } });
  const message = {
    parts: [part('text', 'one'), part('data', '{"a":1}'), part('text', 'two'), part('url', 'x')],
  };
  assert.equal(textOf(message), 'one\ntwo');
  assert.equal(textOf({ parts: [] }), '');
  assert.equal(replyArtifactId('task-1'), 'task-1-reply');
});

test('millisecond settings', () => {
  assert.equal(parseMillis('delay-ms', '250'), 250n);
  assert.equal(parseMillis('delay-ms', ' 0 '), 0n);
  assert.throws(() => parseMillis('delay-ms', '1.5s'), (e) => {
    assert.match(e.message, /delay-ms/);
    assert.match(e.message, /1\.5s/);
    return true;
  });
  assert.throws(() => parseMillis('delay-ms', '-1'));
  assert.throws(() => parseMillis('delay-ms', ''));
  assert.throws(() => parseMillis('delay-ms', '18446744073709551616'));
});
