// Dead letters: an event whose branch evaluation exceeded the runtime cost budget (core/conditions/cost.ts) or
// threw is not retried. It is recorded for the tenant with the reason, in the same transaction that moves the
// partition's offset past it, and the user stays where they were. So a restart never evaluates it again, and the
// tenant can list, inspect and discard what was set aside (GET/DELETE /api/v1/tenants/{tenant}/dead-letters).
import type { CompiledCondition, ConditionInput, CrowdMembership } from '../conditions/compile';
import { notFound } from '../errors';
import { randomBytes } from 'node:crypto';
import type { Database } from '../storage/database';
import { type DeadLetterRow, type DeadLetterWrite, deadLetterRow, deadLetterRows, deleteDeadLetter } from '../storage/dead-letters';
import type { LogRow } from './log';
import type { LoggedEvent } from './types';

export interface DeadLetterView {
  id: string;
  instanceId: string;
  step: string;
  /** Where the event is in the tenant's input log: partition, log row offset and index within that row. */
  partition: number;
  logOffset: number;
  eventIndex: number;
  reason: string;
  createdAt: string;
  event: { user: number; type: string; data: Record<string, unknown>; time: string };
}

type Pending = { id: string; instanceId: string; step: string; logOffset: number; eventIndex: number; event: LoggedEvent; reason: string };

/** The dead letters of one batch of log rows, written with the batch's commit. */
export class DeadLetterBatch {
  private readonly pending: Pending[] = [];

  constructor(
    private readonly partition: number,
    private readonly rows: LogRow[],
  ) {}

  get size(): number {
    return this.pending.length;
  }

  /**
   * The index of the first branch whose condition holds for the event, or -1 when none does. An evaluation that
   * throws (ConditionCostExceeded, or anything else) sets the event aside for this instance and gives -1.
   */
  firstBranch(
    conditions: readonly CompiledCondition[],
    input: ConditionInput,
    crowds: CrowdMembership,
    where: { instanceId: string; step: string; index: number },
  ): number {
    let i = 0;
    try {
      for (; i < conditions.length; i++) if (conditions[i].predicate(input, crowds)) return i;
      return -1;
    } catch (error) {
      this.setAside(where, `branches[${i}].condition: ${(error as Error).message}`);
      return -1;
    }
  }

  /** Whether `condition` holds for the event; an evaluation that throws sets the event aside and gives false. */
  holds(
    condition: CompiledCondition,
    input: ConditionInput,
    crowds: CrowdMembership,
    where: { instanceId: string; step: string; index: number; field: string },
  ): boolean {
    try {
      return condition.predicate(input, crowds);
    } catch (error) {
      this.setAside(where, `${where.field}: ${(error as Error).message}`);
      return false;
    }
  }

  private setAside(where: { instanceId: string; step: string; index: number }, reason: string): void {
    const { offset, index } = this.locate(where.index);
    this.pending.push({
      id: deadLetterId(),
      instanceId: where.instanceId,
      step: where.step,
      logOffset: offset,
      eventIndex: index,
      event: this.eventAt(where.index),
      reason,
    });
  }

  /** The rows for the commit of this batch (none when nothing was set aside). */
  writes(): DeadLetterWrite[] {
    return this.pending.map((p) => ({ ...p, partition: this.partition, event: JSON.stringify(p.event) }));
  }

  /** Log row offset and index within it of the batch's `index`-th event (the rows' events, concatenated). */
  private locate(index: number): { offset: number; index: number } {
    let remaining = index;
    for (const row of this.rows) {
      if (remaining < row.events.length) return { offset: row.offset, index: remaining };
      remaining -= row.events.length;
    }
    return { offset: this.rows.at(-1)?.offset ?? 0, index: remaining };
  }

  private eventAt(index: number): LoggedEvent {
    const { offset, index: within } = this.locate(index);
    return this.rows.find((row) => row.offset === offset)!.events[within];
  }
}

/** Ids that sort by creation time (lower-case base 36 milliseconds, then random hex), so listing pages by id. */
function deadLetterId(): string {
  return `dl_${Date.now().toString(36).padStart(10, '0')}${randomBytes(6).toString('hex')}`;
}

function view(row: DeadLetterRow): DeadLetterView {
  const event = JSON.parse(row.event) as LoggedEvent;
  const created = row.createdAt instanceof Date ? row.createdAt : new Date(`${String(row.createdAt).replace(' ', 'T')}Z`);
  return {
    id: row.id,
    instanceId: row.instanceId,
    step: row.step,
    partition: Number(row.partition),
    logOffset: Number(row.logOffset),
    eventIndex: Number(row.eventIndex),
    reason: row.reason,
    createdAt: Number.isNaN(created.getTime()) ? String(row.createdAt) : created.toISOString(),
    event: { user: event.user, type: event.type, data: event.data, time: new Date(event.time).toISOString() },
  };
}

/** The tenant's dead letters, oldest first, `limit` at a time after the one with id `after`. */
export async function listDeadLetters(
  database: Database,
  tenantId: string,
  options: { limit: number; after?: string },
): Promise<{ deadLetters: DeadLetterView[]; next: string | null }> {
  const rows = await deadLetterRows(database, tenantId, options.limit + 1, options.after);
  const page = rows.slice(0, options.limit).map(view);
  return { deadLetters: page, next: rows.length > options.limit ? page.at(-1)!.id : null };
}

/** Ids this module makes; anything else (a NUL, which PostgreSQL text cannot hold) is a 404 without a query. */
const isDeadLetterId = (id: string) => /^dl_[0-9a-z]+$/.test(id);

export async function getDeadLetter(database: Database, tenantId: string, id: string): Promise<DeadLetterView> {
  if (!isDeadLetterId(id)) throw notFound(`Dead letter "${id.slice(0, 60)}"`);
  const row = await deadLetterRow(database, tenantId, id);
  if (!row) throw notFound(`Dead letter "${id}"`);
  return view(row);
}

/** Discards a dead letter for good (the event stays in the input log until the log is trimmed). */
export async function discardDeadLetter(database: Database, tenantId: string, id: string): Promise<void> {
  if (!isDeadLetterId(id)) throw notFound(`Dead letter "${id.slice(0, 60)}"`);
  if (!(await deleteDeadLetter(database, tenantId, id))) throw notFound(`Dead letter "${id}"`);
}
