// The engine thread (a worker_threads Worker started by server/engine/client.ts): partition apply loops, timers,
// ttl, checkpoints, recovery and the instance operations run here, on a thread of their own, so no engine work ever
// holds the thread that answers HTTP. This thread builds its own Runtime (server/runtime.ts): its own Prisma client
// and raw driver on the same database, its own caches. It publishes every instance's counts after each change and
// answers the calls of the request thread between two slices of its work.
import { parentPort } from 'node:worker_threads';
import type { Principal } from '../auth';
import { processNotice } from '../crowd/notice';
import { getProcedureRunner } from '../procedures/runner';
import { applyRelayedProfileWrite } from '../profiles/index-store';
import { runtime } from '../runtime';
import { closeDb } from '../storage/db';
import { Engine } from './engine';
import { clusterMember } from '../cluster';
import type { StepUsers } from './types';
import { serializeError, type EngineCallName, type FromEngine, type ToEngine } from './thread-protocol';

const port = parentPort;
if (!port) throw new Error('server/engine/thread.ts runs as a worker thread (started by server/engine/client.ts)');

const post = (message: FromEngine, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

const engine = new Engine({
  runner: getProcedureRunner(),
  publishCounts: (tenantId, counts, coverage) => post({ kind: 'counts', tenantId, counts, coverage }),
  cluster: clusterMember(),
});
runtime().engine = engine;

type Call = (...args: never[]) => Promise<unknown>;
const calls: Record<EngineCallName, Call> = {
  getCounts: (tenantId: string, instanceId: string) => engine.getCounts(tenantId, instanceId),
  liveCounts: (tenantId: string, instanceId: string) => engine.liveCounts(tenantId, instanceId),
  // Portable roaring bytes in a fresh buffer of their own, so the reply transfers it instead of copying it.
  stepBitmap: async (tenantId: string, instanceId: string, step: string, users: StepUsers) =>
    new Uint8Array((await engine.stepBitmap(tenantId, instanceId, step, users)).serialize('portable')),
  whereIsUser: (tenantId: string, user: number) => engine.whereIsUser(tenantId, user),
  ingestBody: (principal: Principal, body: Uint8Array, now: number, key?: string) => engine.ingestBody(principal, body, now, key),
  materializeStart: (tenantId: string, instanceId: string) => engine.materializeStart(tenantId, instanceId),
  materializeStop: (tenantId: string, instanceId: string) => engine.materializeStop(tenantId, instanceId),
  materializeUpdateCrowd: (tenantId: string, instanceId: string, crowd: string) => engine.materializeUpdateCrowd(tenantId, instanceId, crowd),
  materializeUpdateWorkflow: (tenantId: string, instanceId: string, version: number, mapping: Record<string, string>) =>
    engine.materializeUpdateWorkflow(tenantId, instanceId, version, mapping),
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
    calls[name](...(args as never[])).then(
      (value) => post({ kind: 'reply', id, value }, value instanceof Uint8Array ? [value.buffer as ArrayBuffer] : []),
      (error: unknown) => post({ kind: 'reply', id, error: serializeError(error) }),
    );
  }
});
