import { LoopIdle, systemClock, Wakeup, type Clock } from '../clock';
import { isUniqueViolation } from '../errors';
import { parseCron } from '../../core/model/cron';
import type { WorkflowSchedule } from '../../core/model/workflow';
import type { Database } from '../storage/database';
import { onTenantDeleted } from '../tenants/changes';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import { onScheduleChanged } from './schedule-changes';
import { Schedules, type ScheduledWorkflow, type ScheduleEntry, type ScheduleRow } from './schedules';
import { newProcedureRecord } from './store';
import { FINISHED_STATES, type Json, type ProcedureRunner } from './types';

// Scheduled starts (after luno/workflow's Schedule): each firing of a workflow's cron submits one start procedure whose
// id is derived from the workflow and the firing time, so however many processes (or overlapping ticks) see the same
// firing, it starts at most once. A firing while the workflow already has an instance is recorded as skipped.
//
// The scheduler keeps the schedules it read (./schedules.ts) and sleeps until the earliest next firing: between
// firings it touches no row. A save or delete of a schedule (a notice, from this process or, through the cluster
// channel, another member) and a tenant's deletion wake it to read them again; a slow safety re-read (`rereadMs`)
// catches a change whose notice was lost, and the rows of due schedules are read again before they fire.
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
  /** How often the schedules are read again though no notice said they changed. Default 60 s. */
  rereadMs?: number;
}

/** A lost notice (another member's save while the channel was down) delays a changed schedule by at most this. */
const DEFAULT_REREAD_MS = 60_000;
/** After a failed look (the database down), the next one comes this much later. */
const RETRY_MS = 1_000;

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
  /**
   * Fires every enabled schedule whose next firing has come since the previous tick (the first tick only starts the
   * watch, recording what was missed while no server ran); reads the schedules again first when they changed.
   */
  tick(): Promise<Firing[]>;
  /** Resolves once the loop sleeps with its time still to come (tests moving a ManualClock). */
  settled(): Promise<void>;
}

/** The id of a firing's procedure; ids of one workflow sort by firing time (13-digit epoch ms until the year 2286). */
export function scheduledProcedureId(workflowId: string, firingMs: number | ''): string {
  return `schedule:${workflowId}:${firingMs}`;
}

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
  const rereadMs = options.rereadMs ?? DEFAULT_REREAD_MS;
  const schedules = new Schedules();
  /** When the schedules were last read in full; undefined until the first tick (which only starts the watch). */
  let readAt: number | undefined;
  /** A schedule was saved or deleted since they were read (a notice of this process or another member). */
  let changed = false;
  const woken = new Wakeup();
  const idle = new LoopIdle(clock);
  let loop: Promise<void> | undefined;
  let stopping: AbortController | undefined;

  function readSchedules(): Promise<ScheduleRow[]> {
    return database.db.workflow.findMany({
      where: { schedule: { not: null } },
      select: { id: true, tenantId: true, schedule: true, updatedAt: true },
    });
  }

  async function tick(): Promise<Firing[]> {
    const now = clock.now();
    if (readAt === undefined) return firstLook(now);
    if (changed || now - readAt >= rereadMs) await readAgain(now);
    const firings: Firing[] = [];
    // Twice at most: a due schedule found changed is fired, if still due, from the copy read again at once.
    for (let round = 0; round < 2; round++) {
      const due = schedules.due(now);
      if (due.length === 0) break;
      // The due rows are read again before they fire: a schedule another member changed or deleted, whose notice this
      // process missed, never fires from the old copy.
      const rows = await database.db.workflow.findMany({ where: { id: { in: due.map((entry) => entry.workflow.id) } }, select: { id: true, schedule: true } });
      const stored = new Map(rows.map((row) => [row.id, row.schedule]));
      let stale = false;
      for (const entry of due) {
        const text = stored.get(entry.workflow.id);
        if (text === undefined) schedules.delete(entry.workflow.id);
        else if (text !== entry.text) stale = true;
        else {
          const firing = await fireDue(entry, now);
          if (firing) firings.push(firing);
        }
      }
      if (!stale) break;
      await readAgain(now);
    }
    return firings;
  }

  async function readAgain(now: number): Promise<void> {
    changed = false;
    const since = readAt ?? now;
    schedules.replace(await readSchedules(), since, now);
    readAt = now;
  }

  /** Fires the entry's latest firing and moves it to its next; a failure is logged and the firing lost, as before. */
  async function fireDue(entry: ScheduleEntry, now: number): Promise<Firing | null> {
    const firingMs = schedules.take(entry, now);
    try {
      return await fire(entry.workflow, entry.schedule, firingMs);
    } catch (error) {
      console.warn(`[scheduler] workflow ${entry.workflow.id}: ${(error as Error).message}`);
      return null;
    }
  }

  /** A process's first tick: reads every schedule and records or runs what each missed while no server ran. */
  async function firstLook(now: number): Promise<Firing[]> {
    changed = false;
    const rows = await readSchedules();
    readAt = now;
    const firings: Firing[] = [];
    for (const row of rows) {
      const entry = schedules.addFresh(row, now);
      if (!entry) continue;
      try {
        const missed = await catchUp(entry.workflow, entry.schedule, now);
        if (missed) firings.push(missed);
      } catch (error) {
        console.warn(`[scheduler] workflow ${row.id}: ${(error as Error).message}`);
      }
    }
    return firings;
  }

  /** How long the loop may sleep: until the earliest firing or the safety re-read, or not at all after a change. */
  function untilNextLook(): number {
    if (changed) return 0;
    const now = clock.now();
    return Math.min(schedules.earliest(), (readAt ?? now) + rereadMs) - now;
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
    const busy = await runningWork(database, workflow.tenantId, workflow.id, procedureId);
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
      const wake = () => {
        changed = true;
        woken.wake();
      };
      const unsubscribe = [onScheduleChanged(database, wake), onTenantDeleted(database, wake)];
      idle.started();
      loop = (async () => {
        while (!abort.signal.aborted) {
          const signal = woken.signal();
          let wait: number;
          try {
            await tick();
            wait = untilNextLook();
          } catch (error) {
            console.error('[scheduler] tick failed', error);
            wait = RETRY_MS;
          }
          if (wait <= 0) {
            // Look again at once, but let timers and I/O run first (SQLite calls resolve without yielding to them).
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
          await idle.sleep(wait, signal);
        }
      })().finally(() => {
        for (const off of unsubscribe) off();
        idle.stopped();
      });
    },
    async stop() {
      stopping?.abort();
      woken.wake();
      await loop;
      loop = undefined;
    },
    settled: () => idle.settled(),
  };
}

/** What keeps a workflow busy: an active instance, or a start still in progress (its instance may not exist yet). */
async function runningWork(
  database: Database,
  tenantId: string,
  workflowId: string,
  exceptProcedureId: string,
): Promise<{ instanceId?: string; procedureId?: string } | null> {
  const instance = await database.db.instance.findFirst({ where: { tenantId, workflowId, state: { in: ACTIVE_INSTANCE_STATES } }, select: { id: true } });
  if (instance) return { instanceId: instance.id };
  const starting = await database.db.procedure.findFirst({
    where: { workflowId, type: SCHEDULED_START_TYPE, state: { notIn: [...FINISHED_STATES] }, id: { not: exceptProcedureId } },
    select: { id: true },
  });
  return starting ? { procedureId: starting.id } : null;
}
