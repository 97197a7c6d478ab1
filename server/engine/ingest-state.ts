import type { TenantQueue } from './ingest-commit';
import type { TenantDedupe } from './ingest-dedupe';
import type { UserPartitioning } from './partitioning';
import type { RecentLog } from './recent-log';

/** What ingest keeps in a thread between batches: its app's state (server/app.ts) holds it and hands it in. */
export interface IngestState {
  /** Rows appended here for partition loops of this thread (./recent-log.ts). */
  readonly recentLog: RecentLog;
  /** Per tenant: the Idempotency-Keys and event ids of the dedupe window (./ingest-dedupe.ts). */
  readonly ingestDedupe: Map<string, TenantDedupe>;
  /** Per tenant: the batches waiting for its group commit (./ingest-commit.ts). */
  readonly ingestQueues: Map<string, TenantQueue>;
  /** How the users of tenants seen by ingest map to their partitions (a tenant's never changes; ./ingest.ts). */
  readonly tenantPartitions: Map<string, UserPartitioning>;
}
