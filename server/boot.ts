import { registerApp } from './app';
import { createApp } from './create-app';
import type { EngineThread } from './engine/thread-spawn';
import { env } from './env';
import { applyMigrations } from './storage/migrate';
import { directDatabaseTarget, poolForRequestsOnly } from './storage/db';
import { stopOnSignals } from './shutdown';

/** Milliseconds each phase of the boot took, in order (logged by server/main.ts when it listens). */
export type BootPhases = Record<string, number>;

/**
 * Once per server process (server/main.ts): builds the request thread's app (server/create-app.ts) and registers it
 * for the route handlers, brings the database schema up to date, then starts the background loops.
 */
export async function boot(engineThread?: EngineThread): Promise<BootPhases> {
  const phases: BootPhases = {};
  let at = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    phases[name] = Math.round(now - at);
    at = now;
  };
  const settings = env();
  const engineOn = settings.CROWDFLOW_ENGINE !== 'off';
  const inThread = engineOn && settings.CROWDFLOW_ENGINE_THREAD === 'on';
  const built = createApp({
    env: settings,
    engine: !engineOn ? 'idle' : inThread ? 'thread' : 'in-process',
    engineThread,
    scheduler: engineOn,
    webhooks: true,
  });
  registerApp(built);
  const applied = await applyMigrations(directDatabaseTarget());
  if (applied.length) console.log(`[crowdflow] applied migrations: ${applied.join(', ')}`);
  phase('migrations');
  if (inThread) poolForRequestsOnly(built.storage);
  await built.start(phase);
  stopOnSignals(() => built.stop());
  return phases;
}
