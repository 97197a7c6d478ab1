// The server listens while its engine thread starts (server/main.ts, server/boot.ts): a call made before the thread
// says it is ready must wait for it, not reach a thread whose engine has not started (its 'start' is still running
// when the next message arrives). Here the engine thread is a stand-in whose readiness the test decides.
import { describe, expect, it } from 'vitest';
import { EngineClient } from '../../server/engine/client';
import type { EngineThread, EngineThreadListener } from '../../server/engine/thread-spawn';
import type { ToEngine } from '../../server/engine/thread-protocol';
import { app } from '../../server/app';

/** An engine thread that records what it is sent and answers only when told, once its client listens. */
function standInThread() {
  const sent: ToEngine[] = [];
  let heard: (listener: EngineThreadListener) => void = () => undefined;
  const listening = new Promise<EngineThreadListener>((resolve) => (heard = resolve));
  const worker = { postMessage: (message: ToEngine) => sent.push(message), once: () => worker, terminate: async () => 0 };
  const thread = { worker, listen: (given: EngineThreadListener) => heard(given) } as unknown as EngineThread;
  return {
    thread,
    sent,
    /** Once the client listens to the thread (after it has started the thread). */
    listening,
    kinds: () => sent.map((message) => (message.kind === 'call' ? `call ${message.name}` : message.kind)),
    answer: async (message: Parameters<EngineThreadListener['message']>[0]) => (await listening).message(message),
  };
}

/** The client alone, a member of no cluster: on PostgreSQL a member would also hold a membership lock and a channel. */
const clientOf = (thread: EngineThread) => new EngineClient(app().database, app().runner, app().state, app().env, undefined, thread);

const macrotask = () => new Promise((resolve) => setImmediate(resolve));

describe('an engine client whose thread is still starting', () => {
  it('holds calls until the thread is ready, then sends them in order', async () => {
    const stand = standInThread();
    const client = clientOf(stand.thread);
    const starting = client.start();
    const counts = client.getCounts('tenant-a', 'instance-1');
    const user = client.whereIsUser('tenant-a', 7);
    await stand.listening;
    await macrotask();
    expect(stand.kinds()).toEqual(['start']);

    await stand.answer({ kind: 'ready' });
    await starting;
    await macrotask();
    expect(stand.kinds()[0]).toBe('start');
    expect(stand.kinds().slice(1).sort()).toEqual(['call getCounts', 'call whereIsUser']);

    const calls = stand.sent.slice(1) as Extract<ToEngine, { kind: 'call' }>[];
    const [countsCall, userCall] = ['getCounts', 'whereIsUser'].map((name) => calls.find((call) => call.name === name)!);
    await stand.answer({ kind: 'reply', id: countsCall.id, value: { steps: { entry: 3 } } });
    await stand.answer({ kind: 'reply', id: userCall.id, value: { instances: [] } });
    expect(await counts).toEqual({ steps: { entry: 3 } });
    expect(await user).toEqual({ instances: [] });
  });

  it('fails the waiting calls with the reason when the thread cannot start', async () => {
    const stand = standInThread();
    const client = clientOf(stand.thread);
    const starting = client.start();
    const counts = client.getCounts('tenant-a', 'instance-1');
    await stand.answer({ kind: 'failed', error: { type: 'error', name: 'Error', message: 'no database' } });
    await expect(starting).rejects.toThrow('no database');
    await expect(counts).rejects.toThrow('no database');
    expect(stand.kinds()).toEqual(['start']);
  });

  it('sends calls at once when the thread is ready', async () => {
    const stand = standInThread();
    const client = clientOf(stand.thread);
    const starting = client.start();
    await stand.answer({ kind: 'ready' });
    await starting;
    void client.getCounts('tenant-a', 'instance-1');
    await macrotask();
    expect(stand.kinds()).toEqual(['start', 'call getCounts']);
  });
});
