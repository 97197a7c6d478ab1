import { registerApp } from './app';
import { createApp } from './create-app';
import type { EngineThread } from './engine/thread-spawn';
import type { Env } from './env';
import { applyMigrations } from './storage/migrate';
import { directDatabaseTarget, poolForRequestsOnly } from './storage/db';
import { stopOnSignals } from './shutdown';

/** Milliseconds each phase of the boot took, in order (logged by server/main.ts). */
export type BootPhases = Record<string, number>;

export interface Booted {
  /** Up to here: the migrations. */
  phases: BootPhases;
  /** The background parts starting (the engine, then the runner, the scheduler, the webhook pump), with their phases. */
  running: Promise<BootPhases>;
}

/**
 * Once per server process (server/main.ts), by the environment it parsed: builds the request thread's app
 * (server/create-app.ts) and registers it for the route handlers, brings the database schema up to date, then starts
 * the background loops. With the engine in its own thread, it resolves once the schema is up to date and the loops
 * are starting, so the server listens while the engine thread starts (calls made meanwhile wait for it:
 * server/engine/client.ts); an engine in this thread is started first.
 */
export async function boot(env: Env, engineThread?: EngineThread): Promise<Booted> {
  const phases: BootPhases = {};
  const later: BootPhases = {};
  let at = performance.now();
  const phaseOf = (into: BootPhases) => (name: string) => {
    const now = performance.now();
    into[name] = Math.round(now - at);
    at = now;
  };
  const engineOn = env.CROWDFLOW_ENGINE !== 'off';
  const inThread = engineOn && env.CROWDFLOW_ENGINE_THREAD === 'on';
  const built = createApp({
    env,
    engine: !engineOn ? 'idle' : inThread ? 'thread' : 'in-process',
    engineThread,
    scheduler: engineOn,
    webhooks: true,
  });
  registerApp(built);
  const applied = await applyMigrations(directDatabaseTarget(built.storage.target, env.CROWDFLOW_DIRECT_DATABASE_URL));
  if (applied.length) console.log(`[crowdflow] applied migrations: ${applied.join(', ')}`);
  phaseOf(phases)('migrations');
  if (inThread) poolForRequestsOnly(built.storage, env.CROWDFLOW_PG_POOL_MAX);
  const running = built.start(phaseOf(inThread ? later : phases)).then(() => {
    stopOnSignals(built.state.shutdown, () => built.stop());
    return later;
  });
  if (!inThread) await running;
  return { phases, running };
}
