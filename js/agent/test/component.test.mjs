// The built agent component (componentize-js), transpiled by jco and run in Node against a fake
// `task` import: the WIT values in and out, the sleep on a `wasi:clocks` pollable, and how a
// `result` error of an import reaches the JavaScript inside. `npm test` builds the component
// first when its inputs changed (`node agent/build.mjs`, about 15 s).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fakeTask, loadAgentComponent, request, text } from '../test-support/component.mjs';

let component;
before(async () => {
  component = await loadAgentComponent();
});
after(() => component?.close());

/** An instance configured with `settings`, over `task`. */
async function agentWith(task, settings = []) {
  const { agent, config } = await component.instance(task);
  config.configure(settings);
  return agent;
}

test('echoes the text parts as one last chunk, then completes', async () => {
  const task = fakeTask();
  const agent = await agentWith(task);
  const outcome = agent.handle(
    request('t1', [text('hello'), { tag: 'data', val: '{"a":1}' }, text('world')]),
  );
  assert.deepEqual(outcome, { tag: 'completed', val: undefined });
  assert.equal(task.artifacts.length, 1);
  const [{ artifact, append, lastChunk }] = task.artifacts;
  assert.equal(artifact.artifactId, 't1-reply');
  assert.equal(artifact.name, 'reply');
  assert.deepEqual(
    artifact.parts.map((p) => p.content),
    [{ tag: 'text', val: 'hello\nworld' }],
  );
  assert.equal(append, false);
  assert.equal(lastChunk, true);
  assert.deepEqual(task.statuses, []);
});

test('ask: ends input-required with the question and emits nothing', async () => {
  const task = fakeTask();
  const agent = await agentWith(task, [['delay-ms', '1000']]);
  const outcome = agent.handle(request('t2', [text('ask: anything')]));
  assert.equal(outcome.tag, 'input-required');
  assert.equal(outcome.val.role, 'agent');
  assert.deepEqual(
    outcome.val.parts.map((p) => p.content),
    [{ tag: 'text', val: 'what should I echo?' }],
  );
  assert.deepEqual(task.artifacts, []);
  // The continuation is echoed (in pieces: the delay applies).
  const next = agent.handle(request('t2', [text('now this')], { continued: true }));
  assert.deepEqual(next, { tag: 'completed', val: undefined });
  assert.equal(task.artifacts.map((a) => a.artifact.parts[0].content.val).join(''), 'now this');
});

test('with delay-ms the reply comes in four pieces spread over the delay', async () => {
  const task = fakeTask();
  const agent = await agentWith(task, [['delay-ms', '200'], ['unknown-setting', 'x']]);
  const started = performance.now();
  const outcome = agent.handle(request('t3', [text('a b c d e f g h')]));
  assert.deepEqual(outcome, { tag: 'completed', val: undefined });
  assert.deepEqual(
    task.artifacts.map((a) => [a.artifact.parts[0].content.val, a.append, a.lastChunk]),
    [
      ['a b ', false, false],
      ['c d ', true, false],
      ['e f ', true, false],
      ['g h', true, true],
    ],
  );
  // Each piece after its quarter of the delay (the pollable sleeps at least that long).
  task.artifacts.forEach((a, i) => {
    assert.ok(a.at - started >= 50 * (i + 1) - 1, `piece ${i} at ${a.at - started} ms`);
  });
  // The agent looked at is-canceled while it waited, not only between pieces.
  assert.ok(task.canceledLooks >= 4, `${task.canceledLooks} looks`);
});

test('the delay is slept in the host, not spun', async () => {
  const task = fakeTask();
  const agent = await agentWith(task, [['delay-ms', '800']]);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  agent.handle(request('t8', [text('a b c d')]));
  const cpu = process.cpuUsage(cpuBefore);
  const wallMs = performance.now() - started;
  const cpuMs = (cpu.user + cpu.system) / 1000;
  assert.ok(wallMs >= 800, `${wallMs} ms`);
  // A busy-wait would burn about the whole delay; blocking on the pollable burns next to none.
  assert.ok(cpuMs < wallMs / 2, `${cpuMs} ms of CPU in ${wallMs} ms`);
});

test('a stopped update ends the run canceled', async () => {
  const task = fakeTask({ refuse: (n) => (n === 1 ? { tag: 'stopped' } : undefined) });
  const agent = await agentWith(task, [['delay-ms', '40']]);
  const outcome = agent.handle(request('t4', [text('a b c d e f g h')]));
  assert.deepEqual(outcome, { tag: 'canceled', val: undefined });
  assert.equal(task.artifacts.length, 1);
});

test('a cancel seen by is-canceled ends the run canceled before the next piece', async () => {
  const task = fakeTask({ canceledAfter: 1 });
  const agent = await agentWith(task, [['delay-ms', '400']]);
  const started = performance.now();
  const outcome = agent.handle(request('t5', [text('a b c d e f g h')]));
  assert.deepEqual(outcome, { tag: 'canceled', val: undefined });
  assert.equal(task.artifacts.length, 1);
  assert.ok(performance.now() - started < 300, 'stopped without sleeping the rest of the delay');
});

test('a refused update fails the run, naming the refusal', async () => {
  const task = fakeTask({ refuse: () => ({ tag: 'limit', val: 'update over 10 bytes' }) });
  const agent = await agentWith(task);
  const outcome = agent.handle(request('t6', [text('a long reply')]));
  assert.equal(outcome.tag, 'failed');
  assert.deepEqual(
    outcome.val.parts.map((p) => p.content),
    [{ tag: 'text', val: 'the reply is over a limit: update over 10 bytes' }],
  );
});

test('a bad delay-ms is refused with a message naming it', async () => {
  const { config } = await component.instance(fakeTask());
  assert.throws(
    () => config.configure([['delay-ms', 'soon']]),
    (e) => {
      const message = String(e.payload ?? e.message);
      assert.match(message, /delay-ms must be a whole number of milliseconds, not "soon"/);
      return true;
    },
  );
});

test('cancel has nothing to release', async () => {
  const { agent } = await component.instance(fakeTask());
  assert.equal(agent.cancel('t7', 'c7'), undefined);
});
