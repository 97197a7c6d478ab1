// Ingest and the partition loops usually run in the same process: rows this process has just appended are handed to
// the loops from memory, so they skip reading back what was written a moment before. A row is held as its encoded
// bytes (what the request thread sent) and decoded when a loop takes it. The log table stays the source of truth: a
// loop that finds nothing here (another process appended the row, the row was trimmed, a commit failed and the loop
// re-reads) reads the table as before.
import { decodeEvents } from './log-codec';
import type { LoggedEvent } from './types';

/** Per partition: rows kept for a loop that is not reading (another process owns the partition) stop here. */
const MAX_EVENTS_PER_PARTITION = 200_000;

/** Rows appended and not taken yet, of one partition: offset → the row as encoded and its event count, in offset order. */
type RecentRows = { rows: Map<number, { bytes: Uint8Array; count: number }>; events: number };

const keyOf = (tenantId: string, partition: number) => `${tenantId}\u0000${partition}`;

/** One thread's rows: its app's ingest remembers them, its engine's partition loops take them. */
export class RecentLog {
  /** Whether ingest hands appended rows to partition loops of this thread (off when the engine has its own thread). */
  enabled = true;
  private readonly partitions = new Map<string, RecentRows>();

  /** Called by ingest after the row at `offset` (`count` events encoded as `bytes`) committed. */
  remember(tenantId: string, partition: number, offset: number, bytes: Uint8Array, count: number): void {
    if (!this.enabled) return;
    const key = keyOf(tenantId, partition);
    let held = this.partitions.get(key);
    if (!held) this.partitions.set(key, (held = { rows: new Map(), events: 0 }));
    held.rows.set(offset, { bytes, count });
    held.events += count;
    for (const [oldest, row] of held.rows) {
      if (held.events <= MAX_EVENTS_PER_PARTITION) break;
      held.rows.delete(oldest);
      held.events -= row.count;
    }
  }

  /** The rows right after `offset` (contiguous, at most `limit`), taken out of memory; rows at or before it are dropped. */
  take(tenantId: string, partition: number, offset: number, limit: number): { offset: number; events: LoggedEvent[] }[] {
    const held = this.partitions.get(keyOf(tenantId, partition));
    if (!held) return [];
    for (const [at, row] of held.rows) {
      if (at > offset) break;
      held.rows.delete(at);
      held.events -= row.count;
    }
    const out: { offset: number; events: LoggedEvent[] }[] = [];
    for (let next = offset + 1; out.length < limit; next++) {
      const row = held.rows.get(next);
      if (!row) break;
      held.rows.delete(next);
      held.events -= row.count;
      out.push({ offset: next, events: decodeEvents(row.bytes) });
    }
    return out;
  }
}
