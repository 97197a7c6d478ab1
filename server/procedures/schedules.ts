import { nextCronTime, parseCron } from '../../core/model/cron';
import { WorkflowSchedule } from '../../core/model/workflow';

// The scheduler's copy of the enabled schedules it read, each with its next firing computed once (when read, and
// again after each firing), so the scheduler sleeps until the earliest and evaluates no cron in between: at 1,000
// tenants, reading every schedule and asking cron-parser about each every second was the idle server's work.

export type ScheduledWorkflow = { id: string; tenantId: string; updatedAt: Date };
export type ScheduleRow = ScheduledWorkflow & { schedule: string | null };

export type ScheduleEntry = {
  workflow: ScheduledWorkflow;
  schedule: WorkflowSchedule;
  /** The schedule as stored: a row whose text differs was saved since it was read. */
  text: string;
  /** The next firing after the last one looked at (epoch ms). */
  nextMs: number;
};

export class Schedules {
  private entries = new Map<string, ScheduleEntry>();

  get size(): number {
    return this.entries.size;
  }

  all(): IterableIterator<ScheduleEntry> {
    return this.entries.values();
  }

  /**
   * Replaces the copy with `rows` (every scheduled workflow, just read). An unchanged schedule keeps its next firing; a
   * new or changed one looks for firings from `since` (when the previous copy was read), or from its save when that is
   * later and not ahead of this clock (another process's clock, or a test's): as a per-second re-read did, it fires the
   * latest firing that fell after the copy without it was read, but none before its save.
   */
  replace(rows: ScheduleRow[], since: number, now: number): void {
    const previous = this.entries;
    this.entries = new Map();
    for (const row of rows) {
      const kept = previous.get(row.id);
      if (kept && kept.text === row.schedule) {
        this.entries.set(row.id, { ...kept, workflow: workflowOf(row) });
        continue;
      }
      const savedMs = row.updatedAt.getTime();
      const fromMs = savedMs <= now ? Math.max(since, savedMs) : since;
      const entry = entryOf(row, fromMs);
      if (entry) this.entries.set(row.id, entry);
    }
  }

  /** Adds `row` read at a process's first look: its firings after `now` are due; catch-up handles the ones before. */
  addFresh(row: ScheduleRow, now: number): ScheduleEntry | null {
    const entry = entryOf(row, now);
    if (entry) this.entries.set(row.id, entry);
    return entry;
  }

  delete(workflowId: string): void {
    this.entries.delete(workflowId);
  }

  /** The entries whose next firing has come. */
  due(now: number): ScheduleEntry[] {
    return [...this.entries.values()].filter((entry) => entry.nextMs <= now);
  }

  /** The earliest next firing, or Infinity. */
  earliest(): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const entry of this.entries.values()) earliest = Math.min(earliest, entry.nextMs);
    return earliest;
  }

  /**
   * The entry's latest firing at or before `now` (only that one counts: a late look fires once, not once per firing it
   * slept through), its next firing moved past `now`.
   */
  take(entry: ScheduleEntry, now: number): number {
    entry.nextMs = nextCronTime(entry.schedule.cron, now);
    return parseCron(entry.schedule.cron, now + 1)
      .prev()
      .getTime();
  }
}

function workflowOf(row: ScheduleRow): ScheduledWorkflow {
  return { id: row.id, tenantId: row.tenantId, updatedAt: row.updatedAt };
}

/** An enabled, valid schedule with its first firing after `fromMs`; null for a disabled or invalid one. */
function entryOf(row: ScheduleRow, fromMs: number): ScheduleEntry | null {
  if (row.schedule === null) return null;
  let schedule: WorkflowSchedule;
  let nextMs: number;
  try {
    const parsed = WorkflowSchedule.safeParse(JSON.parse(row.schedule));
    if (!parsed.success || !parsed.data.enabled) return null;
    schedule = parsed.data;
    nextMs = nextCronTime(schedule.cron, fromMs);
  } catch (error) {
    console.warn(`[scheduler] workflow ${row.id}: ${(error as Error).message}`);
    return null;
  }
  return { workflow: workflowOf(row), schedule, text: row.schedule, nextMs };
}
