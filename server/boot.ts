import { startEngine, stopEngine } from './engine';
import { startEngineThread } from './engine/client';
import { applyMigrations } from './storage/migrate';
import { directDatabaseTarget, poolForRequestsOnly } from './storage/db';
import { database } from './storage/database';
import { env } from './env';
import { getProcedureRunner } from './procedures/runner';
import { startProcedures, stopProcedures } from './procedures/start';
import { stopOnSignals } from './shutdown';
import { startWebhooks, stopWebhooks } from './webhooks/pump';

/** Milliseconds each phase of the boot took, in order (logged by server/main.ts when it listens). */
export type BootPhases = Record<string, number>;

let booted: Promise<BootPhases> | undefined;

/** Once per server process: bring the database schema up to date, then start the background loops. */
export function boot(): Promise<BootPhases> {
  booted ??= (async () => {
    const phases: BootPhases = {};
    let at = performance.now();
    const phase = (name: string) => {
      const now = performance.now();
      phases[name] = Math.round(now - at);
      at = now;
    };
    const applied = await applyMigrations(directDatabaseTarget());
    if (applied.length) console.log(`[crowdflow] applied migrations: ${applied.join(', ')}`);
    phase('migrations');
    if (env().CROWDFLOW_ENGINE !== 'off') {
      if (env().CROWDFLOW_ENGINE_THREAD === 'on') {
        poolForRequestsOnly();
        await startEngineThread(database(), getProcedureRunner());
      } else await startEngine();
      phase('engine');
    }
    await startProcedures({ scheduler: env().CROWDFLOW_ENGINE !== 'off' });
    startWebhooks(database(), getProcedureRunner());
    phase('procedures');
    stopOnSignals(async () => {
      await stopWebhooks();
      await stopProcedures();
      await stopEngine();
    });
    return phases;
  })();
  return booted;
}
