import { systemClock, type Clock } from '../clock';
import { isUniqueViolation } from '../errors';
import { parseCron } from '../../core/model/cron';
import { WorkflowSchedule } from '../../core/model/workflow';
import type { Database } from '../storage/database';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import { newProcedureRecord } from './store';
import { FINISHED_STATES, type Json, type ProcedureRunner } from './types';

// Scheduled starts (after luno/workflow's Schedule): each firing of a workflow's cron submits one start procedure whose
// id is derived from the workflow and the firing time, so however many processes (or overlapping ticks) see the same
// firing, it starts at most once. A firing while the workflow already has an instance is recorded as skipped.
//
// Firings missed while no server ran (found by a process's first tick: those after the schedule's last recorded
// firing, or after the workflow was last saved) follow the schedule's catch-up policy, like a Kubernetes CronJob's
// startingDeadlineSeconds: `skip` records the latest missed firing as missed (with how many were missed); `latest` runs
// the latest missed firing if it is at most `startingDeadlineSeconds` old, and records it as missed otherwise.

export const SCHEDULED_START_TYPE = 'instance.start';

export interface SchedulerOptions {
  /** Where workflows, instances and procedure records are read. */
  database: Database;
  runner: ProcedureRunner;
  clock?: Clock;
  /** How often schedules are re-read and firings looked for. Default 1 s (crons have second precision). */
  pollMs?: number;
}

export type FiringOutcome = 'submitted' | 'skipped' | 'missed' | 'already-recorded' | 'error';
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

/** The id of a firing's procedure; ids of one workflow sort by firing time (13-digit epoch ms until the year 2286). */
export function scheduledProcedureId(workflowId: string, firingMs: number | ''): string {
  return `schedule:${workflowId}:${firingMs}`;
}

type ScheduledWorkflow = { id: string; tenantId: string; updatedAt: Date };

function startState(workflow: ScheduledWorkflow, schedule: WorkflowSchedule, firingMs: number, extra: Record<string, Json> = {}): { [key: string]: Json } {
  return {
    tenantId: workflow.tenantId,
    workflowId: workflow.id,
    crowd: schedule.crowd,
    reentry: schedule.reentry,
    scheduledAt: new Date(firingMs).toISOString(),
    ...extra,
  };
}

/** Counting stops here: a second-by-second schedule down for a day still answers in milliseconds. */
const MAX_COUNTED_FIRINGS = 100_000;

/** Firings of `cron` in (fromMs, toMs]: how many (counted up to MAX_COUNTED_FIRINGS), the first and the latest. */
export function firingsBetween(cron: string, fromMs: number, toMs: number): { count: number; firstMs: number; latestMs: number } | null {
  const latestMs = parseCron(cron, toMs + 1)
    .prev()
    .getTime();
  if (latestMs <= fromMs) return null;
  const iterator = parseCron(cron, fromMs);
  const firstMs = iterator.next().getTime();
  let count = 1;
  while (count < MAX_COUNTED_FIRINGS && iterator.next().getTime() <= latestMs) count++;
  return { count, firstMs, latestMs };
}

export function createScheduler(options: SchedulerOptions): Scheduler {
  const clock = options.clock ?? systemClock;
  const { database } = options;
  const pollMs = options.pollMs ?? 1_000;
  let watchedSince: number | undefined;
  let loop: Promise<void> | undefined;
  let stopping: AbortController | undefined;

  async function tick(): Promise<Firing[]> {
    const now = clock.now();
    const firstTick = watchedSince === undefined;
    const since = watchedSince ?? now;
    watchedSince = now;
    if (!firstTick && since >= now) return [];
    const workflows = await database.db.workflow.findMany({
      where: { schedule: { not: null } },
      select: { id: true, tenantId: true, schedule: true, updatedAt: true },
    });
    const firings: Firing[] = [];
    for (const workflow of workflows) {
      const parsed = WorkflowSchedule.safeParse(JSON.parse(workflow.schedule!));
      if (!parsed.success || !parsed.data.enabled) continue;
      const schedule = parsed.data;
      try {
        if (firstTick) {
          const missed = await catchUp(workflow, schedule, now);
          if (missed) firings.push(missed);
          continue;
        }
        // Only the latest firing in the window counts: a late tick fires once, not once per firing it slept through.
        const firingMs = parseCron(schedule.cron, now + 1)
          .prev()
          .getTime();
        if (firingMs > since) firings.push(await fire(workflow, schedule, firingMs));
      } catch (error) {
        console.warn(`[scheduler] workflow ${workflow.id}: ${(error as Error).message}`);
      }
    }
    return firings;
  }

  /** The first tick of a process: what the schedule missed since its last recorded firing (or its last save). */
  async function catchUp(workflow: ScheduledWorkflow, schedule: WorkflowSchedule, now: number): Promise<Firing | null> {
    const last = await database.db.procedure.findFirst({
      where: { id: { startsWith: scheduledProcedureId(workflow.id, '') } },
      orderBy: { id: 'desc' },
      select: { id: true },
    });
    const lastFiringMs = last ? Number(last.id.slice(last.id.lastIndexOf(':') + 1)) : 0;
    const missed = firingsBetween(schedule.cron, Math.max(lastFiringMs, workflow.updatedAt.getTime()), now);
    if (!missed) return null;
    const lateMs = now - missed.latestMs;
    const deadlineMs = schedule.startingDeadlineSeconds * 1000;
    if (schedule.catchUp === 'latest' && lateMs <= deadlineMs) return fire(workflow, schedule, missed.latestMs, { missedBefore: missed.count - 1 });
    const reason =
      schedule.catchUp === 'skip'
        ? 'no server was running (catch-up policy: skip)'
        : `no server was running, and it is ${Math.round(lateMs / 1000)} s late, past the starting deadline of ${schedule.startingDeadlineSeconds} s`;
    return record(workflow, schedule, missed.latestMs, 'missed', {
      skipped: 'missed',
      reason,
      missedCount: missed.count,
      firstMissedAt: new Date(missed.firstMs).toISOString(),
    });
  }

  async function fire(workflow: ScheduledWorkflow, schedule: WorkflowSchedule, firingMs: number, catchUpInfo: Record<string, Json> = {}): Promise<Firing> {
    const procedureId = scheduledProcedureId(workflow.id, firingMs);
    const firing = { workflowId: workflow.id, procedureId, firingMs };
    if (await database.db.procedure.findUnique({ where: { id: procedureId }, select: { id: true } })) return { ...firing, outcome: 'already-recorded' };
    const busy = await runningWork(database, workflow.id, procedureId);
    if (busy) return record(workflow, schedule, firingMs, 'skipped', { skipped: 'already running', ...busy });
    const state = startState(workflow, schedule, firingMs, catchUpInfo);
    try {
      await options.runner.submit(SCHEDULED_START_TYPE, state, { id: procedureId, tenantId: workflow.tenantId, workflowId: workflow.id });
      return { ...firing, outcome: 'submitted' };
    } catch (error) {
      console.error(`[scheduler] could not start workflow ${workflow.id} for the firing at ${state.scheduledAt}`, error);
      return { ...firing, outcome: 'error' };
    }
  }

  /** A firing that starts nothing, recorded as a finished procedure (shown with the others; never recorded twice). */
  async function record(
    workflow: ScheduledWorkflow,
    schedule: WorkflowSchedule,
    firingMs: number,
    outcome: 'skipped' | 'missed',
    output: Json,
  ): Promise<Firing> {
    const procedureId = scheduledProcedureId(workflow.id, firingMs);
    const firing = { workflowId: workflow.id, procedureId, firingMs };
    try {
      const data = startState(workflow, schedule, firingMs);
      const row = {
        id: procedureId,
        type: SCHEDULED_START_TYPE,
        parentId: null,
        tenantId: workflow.tenantId,
        workflowId: workflow.id,
        lockKeys: [],
        data,
        createdAt: new Date(clock.now()),
        output,
      };
      await database.db.procedure.create({ data: newProcedureRecord(row) });
      return { ...firing, outcome };
    } catch (error) {
      if (isUniqueViolation(error)) return { ...firing, outcome: 'already-recorded' };
      throw error;
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
async function runningWork(database: Database, workflowId: string, exceptProcedureId: string): Promise<{ instanceId?: string; procedureId?: string } | null> {
  const instance = await database.db.instance.findFirst({ where: { workflowId, state: { in: ACTIVE_INSTANCE_STATES } }, select: { id: true } });
  if (instance) return { instanceId: instance.id };
  const starting = await database.db.procedure.findFirst({
    where: { workflowId, type: SCHEDULED_START_TYPE, state: { notIn: [...FINISHED_STATES] }, id: { not: exceptProcedureId } },
    select: { id: true },
  });
  return starting ? { procedureId: starting.id } : null;
}
