import type { Counts } from '../../server/engine/types';

/**
 * The counts an in-process engine publishes after each commit, with when each arrived: what the server's counts API
 * answers from. A fire → counts window ends there: the shards in memory run ahead of a commit in flight (on PostgreSQL
 * a read of them saw a move before its commit ended), and in the bench's one thread a poll of them gets no turn until
 * the engine's work after the commit (the partitions' checkpoints) is done.
 */
export function publishedCounts() {
  const latest = new Map<string, { counts: Counts; at: number }>();
  return { latest, publish: (_tenantId: string, counts: Counts) => void latest.set(counts.instanceId, { counts, at: performance.now() }) };
}
