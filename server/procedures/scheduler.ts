import { systemClock, type Clock } from '../clock';
import { isUniqueViolation } from '../errors';
import { parseCron } from '../model/cron';
import { WorkflowSchedule } from '../model/workflow';
import { db } from '../storage/db';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import { newProcedureRecord } from './store';
import { FINISHED_STATES, type Json, type ProcedureRunner } from './types';

// Scheduled starts (after luno/workflow's Schedule): each firing of a workflow's cron submits one start procedure whose
// id is derived from the workflow and the firing time, so however many processes (or overlapping ticks) see the same
// firing, it starts at most once. A firing while the workflow already has an instance is recorded as skipped.

export const SCHEDULED_START_TYPE = 'instance.start';

export interface SchedulerOptions {
  runner: ProcedureRunner;
  clock?: Clock;
  /** How often schedules are re-read and firings looked for. Default 1 s (crons have second precision). */
  pollMs?: number;
}

export type FiringOutcome = 'submitted' | 'skipped' | 'already-recorded' | 'error';
export interface Firing {
  workflowId: string;
  procedureId: string;
  firingMs: number;
  outcome: FiringOutcome;
}

export interface Scheduler {
  start(): void;
  stop(): Promise<void>;
  /** Fires every enabled schedule whose latest firing fell after the previous tick (the first tick only starts the watch). */
  tick(): Promise<Firing[]>;
}

export function scheduledProcedureId(workflowId: string, firingMs: number): string {
  return `schedule:${workflowId}:${firingMs}`;
}

export function createScheduler(options: SchedulerOptions): Scheduler {
  const clock = options.clock ?? systemClock;
  const pollMs = options.pollMs ?? 1_000;
  let watchedSince: number | undefined;
  let loop: Promise<void> | undefined;
  let stopping: AbortController | undefined;

  async function tick(): Promise<Firing[]> {
    const now = clock.now();
    const since = watchedSince ?? now;
    watchedSince = now;
    if (since >= now) return [];
    const workflows = await db().workflow.findMany({ where: { schedule: { not: null } }, select: { id: true, tenantId: true, schedule: true } });
    const firings: Firing[] = [];
    for (const workflow of workflows) {
      const parsed = WorkflowSchedule.safeParse(JSON.parse(workflow.schedule!));
      if (!parsed.success || !parsed.data.enabled) continue;
      let firingMs: number;
      try {
        // Only the latest firing in the window counts: after downtime a schedule fires once, not once per missed tick.
        firingMs = parseCron(parsed.data.cron, now + 1).prev().getTime();
      } catch (error) {
        console.warn(`[scheduler] workflow ${workflow.id}: ${(error as Error).message}`);
        continue;
      }
      if (firingMs <= since) continue;
      firings.push(await fire({ ...workflow, crowd: parsed.data.crowd }, firingMs));
    }
    return firings;
  }

  async function fire(workflow: { id: string; tenantId: string; crowd: string }, firingMs: number): Promise<Firing> {
    const procedureId = scheduledProcedureId(workflow.id, firingMs);
    const firing = { workflowId: workflow.id, procedureId, firingMs };
    if (await db().procedure.findUnique({ where: { id: procedureId }, select: { id: true } })) return { ...firing, outcome: 'already-recorded' };
    const state: Json = { tenantId: workflow.tenantId, workflowId: workflow.id, crowd: workflow.crowd, scheduledAt: new Date(firingMs).toISOString() };
    const busy = await runningWork(workflow.id, procedureId);
    if (busy) {
      try {
        const output = { skipped: 'already running', ...busy };
        const record = { id: procedureId, type: SCHEDULED_START_TYPE, parentId: null, tenantId: workflow.tenantId, workflowId: workflow.id, lockKeys: [], data: state, createdAt: new Date(clock.now()), output };
        await db().procedure.create({ data: newProcedureRecord(record) });
        return { ...firing, outcome: 'skipped' };
      } catch (error) {
        if (isUniqueViolation(error)) return { ...firing, outcome: 'already-recorded' };
        throw error;
      }
    }
    try {
      await options.runner.submit(SCHEDULED_START_TYPE, state, { id: procedureId, tenantId: workflow.tenantId, workflowId: workflow.id });
      return { ...firing, outcome: 'submitted' };
    } catch (error) {
      console.error(`[scheduler] could not start workflow ${workflow.id} for the firing at ${state.scheduledAt}`, error);
      return { ...firing, outcome: 'error' };
    }
  }

  return {
    tick,
    start() {
      if (loop) return;
      const abort = (stopping = new AbortController());
      loop = (async () => {
        while (!abort.signal.aborted) {
          try {
            await tick();
          } catch (error) {
            console.error('[scheduler] tick failed', error);
          }
          await clock.sleep(pollMs, abort.signal);
        }
      })();
    },
    async stop() {
      stopping?.abort();
      await loop;
      loop = undefined;
    },
  };
}

/** What keeps a workflow busy: an active instance, or a start still in progress (its instance may not exist yet). */
async function runningWork(workflowId: string, exceptProcedureId: string): Promise<{ instanceId?: string; procedureId?: string } | null> {
  const instance = await db().instance.findFirst({ where: { workflowId, state: { in: ACTIVE_INSTANCE_STATES } }, select: { id: true } });
  if (instance) return { instanceId: instance.id };
  const starting = await db().procedure.findFirst({
    where: { workflowId, type: SCHEDULED_START_TYPE, state: { notIn: [...FINISHED_STATES] }, id: { not: exceptProcedureId } },
    select: { id: true },
  });
  return starting ? { procedureId: starting.id } : null;
}
