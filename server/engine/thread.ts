// The engine thread (a worker_threads Worker started by server/engine/client.ts): partition apply loops, timers,
// ttl, checkpoints, recovery and the instance operations run here, on a thread of their own, so no engine work ever
// holds the thread that answers HTTP. This thread builds its own Runtime (server/runtime.ts): its own Prisma client
// and raw driver on the same database, its own caches. It publishes every instance's counts after each change and
// answers the calls of the request thread between two slices of its work.
import { parentPort } from 'node:worker_threads';
import { processNotice } from '../crowd/notice';
import { getProcedureRunner } from '../procedures/runner';
import { applyRelayedProfileWrite } from '../profiles/index-store';
import { runtime } from '../runtime';
import { closeDb } from '../storage/db';
import { database } from '../storage/database';
import { Engine } from './engine';
import { clusterMember } from '../cluster';
import { FORWARDED_CALLS, serializeError, type EngineCalls, type FromEngine, type ToEngine } from './thread-protocol';

const port = parentPort;
if (!port) throw new Error('server/engine/thread.ts runs as a worker thread (started by server/engine/client.ts)');

const post = (message: FromEngine, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

// This thread's storage (the edge that builds the engine thread's parts): the engine and its cluster membership share it.
const storage = database();
const engine = new Engine({
  database: storage,
  runner: getProcedureRunner(),
  publishCounts: (tenantId, counts, coverage) => post({ kind: 'counts', tenantId, counts, coverage }),
  cluster: clusterMember(storage),
});
runtime().engine = engine;

const forwarded = Object.fromEntries(FORWARDED_CALLS.map((name) => [name, engine[name].bind(engine)])) as Pick<EngineCalls, (typeof FORWARDED_CALLS)[number]>;
const calls: EngineCalls = {
  ...forwarded,
  // Portable roaring bytes in a fresh buffer of their own, so the reply transfers it instead of copying it.
  stepBitmap: async (tenantId, instanceId, step, users) => new Uint8Array((await engine.stepBitmap(tenantId, instanceId, step, users)).serialize('portable')),
  alive: async () => true,
  // A clean stop: last checkpoints, leases handed back, storage closed; the thread then ends on its own.
  stop: async () => {
    await engine.stop();
    await closeDb();
    setImmediate(() => port.close());
  },
};

port.on('message', (message: ToEngine) => {
  if (message.kind === 'start') {
    engine.start().then(
      () => post({ kind: 'ready' }),
      (error: unknown) => post({ kind: 'failed', error: serializeError(error) }),
    );
  } else if (message.kind === 'wake') engine.wakeTenant(message.tenantId);
  else if (message.kind === 'notice') processNotice(message.name).notify(...message.args);
  else if (message.kind === 'profiles') void applyRelayedProfileWrite(message.tenantId, message.write, message.seq);
  else {
    const { id, name, args } = message;
    (calls[name] as (...args: unknown[]) => Promise<unknown>)(...args).then(
      (value) => post({ kind: 'reply', id, value }, value instanceof Uint8Array ? [value.buffer as ArrayBuffer] : []),
      (error: unknown) => post({ kind: 'reply', id, error: serializeError(error) }),
    );
  }
});
