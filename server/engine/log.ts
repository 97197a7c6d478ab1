// The partitioned input log (EventLog) as the engine reads it: rows after an offset, from memory when this process
// wrote them, else from the table (server/storage/event-log.ts), decoded.
import { decodeEvents } from './log-codec';
import type { RecentLog } from './recent-log';
import type { LoggedEvent } from './types';
import { logRowsAfter } from '../storage/event-log';
import type { Database } from '../storage/database';

export interface LogRow {
  offset: number;
  events: LoggedEvent[];
}

/** Up to `limit` log rows of one partition after `offset`, in offset order (from memory when this process wrote them). */
export async function readLog(database: Database, recentLog: RecentLog, tenantId: string, partition: number, offset: number, limit: number): Promise<LogRow[]> {
  const recent = recentLog.take(tenantId, partition, offset, limit);
  if (recent.length > 0) return recent;
  const rows = await logRowsAfter(database, tenantId, partition, offset, limit);
  return rows.map((row) => ({ offset: row.offset, events: decodeEvents(row.events) }));
}
