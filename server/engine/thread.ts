// The engine thread (a worker_threads Worker started by server/engine/client.ts): partition apply loops, timers,
// ttl, checkpoints, recovery and the instance operations run here, on a thread of their own, so no engine work ever
// holds the thread that answers HTTP. This thread builds its own app (server/create-app.ts): its own Prisma client
// and raw driver on the same database, its own caches. It publishes every instance's counts after each change and
// answers the calls of the request thread between two slices of its work.
import { parentPort, workerData } from 'node:worker_threads';
import { FORWARDED_PROFILE_CALLS } from '../profiles/calls';
import { applyRelayedProfileWrite, PROFILES_WRITTEN } from '../profiles/index-store';
import { profilesWrittenElsewhere, slimProfileWriteNotice } from '../profiles/cluster-writes';
import { registerApp } from '../app';
import { createApp } from '../create-app';
import { Engine } from './engine';
import { clusterMember, clusterTarget } from '../cluster';
import { FORWARDED_CALLS, serializeError, type EngineCalls, type FromEngine, type ToEngine } from './thread-protocol';
import { ImportBodyReceiver } from './profile-import-stream';
import type { EngineThreadData } from './thread-spawn';

const port = parentPort;
if (!port) throw new Error('server/engine/thread.ts runs as a worker thread (started by server/engine/client.ts)');

const post = (message: FromEngine, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

// This thread's root, built by the environment of the app that spawned it: the engine and its cluster membership
// share its storage; its runner is only submitted to, and wakes the request thread's runner, which runs them.
const { env } = workerData as EngineThreadData;
const built = createApp({
  env,
  runner: { onSubmitted: () => post({ kind: 'procedures-submitted' }) },
  engine: ({ storage, database, runner, state }) =>
    new Engine({
      database,
      runner,
      ingestState: state,
      publishCounts: (tenantId, counts, coverage) => post({ kind: 'counts', tenantId, counts, coverage }),
      cluster: clusterMember(database, clusterTarget(env, storage.target)),
    }),
});
registerApp(built);
const engine = built.engine as Engine;
// In a cluster, notices made here (the profile writes this thread commits) go to the other members through the
// request thread, which holds the cluster channel; a profile write's changes are left out unless the notice can name them.
if (engine.cluster)
  built.database.local.clusterRelay = (name, args) =>
    post({ kind: 'cluster-notice', name, args: name === PROFILES_WRITTEN ? slimProfileWriteNotice(args) : args });

/** Profile imports in progress, by the request thread's id: their bodies arrive as messages. Kept beside the app this
 * root built. */
const imports = new Map<number, ImportBodyReceiver>();

const forwarded = Object.fromEntries(FORWARDED_CALLS.map((name) => [name, engine[name].bind(engine)])) as Pick<EngineCalls, (typeof FORWARDED_CALLS)[number]>;
const profileCalls = Object.fromEntries(FORWARDED_PROFILE_CALLS.map((name) => [name, engine.profiles[name]])) as Pick<
  EngineCalls,
  (typeof FORWARDED_PROFILE_CALLS)[number]
>;
const calls: EngineCalls = {
  ...forwarded,
  ...profileCalls,
  importProfiles: async (importId, tenantId, hasBody, format, columnTypes) => {
    const receiver = new ImportBodyReceiver(importId, post);
    imports.set(importId, receiver); // before any await: the body's first piece is the next message
    try {
      return await engine.profiles.importProfiles(tenantId, hasBody ? receiver.stream : null, format, columnTypes);
    } finally {
      imports.delete(importId); // pieces still on their way are dropped
    }
  },
  // Portable roaring bytes in a fresh buffer of their own, so the reply transfers it instead of copying it.
  stepBitmap: async (tenantId, instanceId, step, users, group) =>
    new Uint8Array((await engine.stepBitmap(tenantId, instanceId, step, users, group)).serialize('portable')),
  alive: async () => true,
  // A clean stop: last checkpoints, leases handed back, storage closed; the thread then ends on its own.
  stop: async () => {
    await engine.stop();
    await built.close();
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
  else if (message.kind === 'import-bytes' || message.kind === 'import-end' || message.kind === 'import-abort') imports.get(message.id)?.received(message);
  else if (message.kind === 'notice' && message.name === PROFILES_WRITTEN) {
    // Another member's profile write, heard by the request thread: this thread's index is the one to catch up.
    const [tenantId, seq, usersText] = message.args;
    void profilesWrittenElsewhere(built.database, String(tenantId), Number(seq), usersText === undefined ? undefined : String(usersText));
  }
  // Delivered here only: the request thread already sent its notices to the cluster.
  else if (message.kind === 'notice') built.database.local.deliver(message.name, message.args);
  else if (message.kind === 'profiles') void applyRelayedProfileWrite(built.database, message.tenantId, message.write, message.seq);
  else {
    const { id, name, args } = message;
    (calls[name] as (...args: unknown[]) => Promise<unknown>)(...args).then(
      (value) => post({ kind: 'reply', id, value }, value instanceof Uint8Array ? [value.buffer as ArrayBuffer] : []),
      (error: unknown) => post({ kind: 'reply', id, error: serializeError(error) }),
    );
  }
});
