// The event types a tenant sent recently, with how many events of each, read from the newest rows of its input log
// (EventLog): what the studio's rule builder offers for `event.type`. Only each row's type table and type column
// are read (log-codec countEventTypes). The log keeps about the last hour of applied rows plus each partition's
// newest (the hourly trim), so "recently" means at most that, and at most RECENT_ROWS rows of the tenant.
import { countEventTypes } from './log-codec';
import type { Database } from '../storage/database';
import { newestLogRows } from '../storage/event-log';

/** Newest log rows read per request, shared out over the tenant's partitions (a row is one ingested batch). */
export const RECENT_ROWS = 256;

export type EventTypeCount = { type: string; events: number };
export type RecentEventTypes = {
  /** Most events first, then by name. */
  types: EventTypeCount[];
  /** Events read, in `rows` log rows. */
  events: number;
  rows: number;
  /** When the oldest row read was appended (ISO 8601); null when the log is empty. */
  since: string | null;
};

export async function recentEventTypes(database: Database, tenantId: string, partitions: number): Promise<RecentEventTypes> {
  const perPartition = Math.max(1, Math.ceil(RECENT_ROWS / partitions));
  const counts = new Map<string, number>();
  let rows = 0;
  let oldest = Number.POSITIVE_INFINITY;
  for (let partition = 0; partition < partitions; partition++) {
    const found = await newestLogRows(database, tenantId, partition, perPartition);
    for (const row of found) {
      countEventTypes(row.events, counts);
      if (row.createdAtMs < oldest) oldest = row.createdAtMs;
    }
    rows += found.length;
  }
  const types = [...counts].map(([type, events]) => ({ type, events })).sort((a, b) => b.events - a.events || a.type.localeCompare(b.type));
  return { types, events: types.reduce((sum, t) => sum + t.events, 0), rows, since: Number.isFinite(oldest) ? new Date(oldest).toISOString() : null };
}
