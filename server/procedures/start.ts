import { runtime } from '../runtime';
import { database } from '../storage/database';
import { getProcedureRunner } from './runner';
import { createScheduler } from './scheduler';

/**
 * Once per server process (server/boot.ts): resume every unfinished procedure and keep running new ones; with the
 * engine on, also fire workflow schedules (their starts need the engine's instance.start type).
 */
export async function startProcedures(options: { scheduler: boolean }): Promise<void> {
  const runner = getProcedureRunner();
  await runner.start();
  if (options.scheduler) (runtime().scheduler ??= createScheduler({ database: database(), runner })).start();
}

/** Stops the scheduler and hands this process's procedures back (they resume elsewhere, or after a restart). */
export async function stopProcedures(): Promise<void> {
  await runtime().scheduler?.stop();
  runtime().scheduler = undefined;
  await getProcedureRunner().stop();
}
