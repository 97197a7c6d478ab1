import { applyMigrations } from './storage/migrate';
import { dbTarget } from './storage/db';
import { env } from './env';
import { stopOnSignals } from './shutdown';

let booted: Promise<void> | undefined;

/** Once per server process: bring the database schema up to date, then start the background loops. */
export function boot(): Promise<void> {
  booted ??= (async () => {
    const applied = await applyMigrations(dbTarget());
    if (applied.length) console.log(`[crowdflow] applied migrations: ${applied.join(', ')}`);
    if (env().CROWDFLOW_ENGINE !== 'off') {
      if (env().CROWDFLOW_ENGINE_THREAD === 'on') await (await import('./engine/client')).startEngineThread((await import('./procedures/runner')).getProcedureRunner());
      else await (await import('./engine')).startEngine();
    }
    const procedures = await import('./procedures/start');
    await procedures.startProcedures({ scheduler: env().CROWDFLOW_ENGINE !== 'off' });
    const webhooks = await import('./webhooks/pump');
    webhooks.startWebhooks((await import('./procedures/runner')).getProcedureRunner());
    stopOnSignals(async () => {
      await webhooks.stopWebhooks();
      await procedures.stopProcedures();
      await (await import('./engine')).stopEngine();
    });
  })();
  return booted;
}
