// The counts the engine thread publishes to the request thread (server/engine/thread.ts), once per instance when the
// running code yields: a tenant's firing commits its 8 partitions at once, each telling, and each publish sums every
// partition and posts a message. A microtask, not a later turn, keeps a publish ahead of whatever the committing code
// does next (an operation's reply, after which the request thread reads the counts it was told).
import type { InstanceRuntime } from './tenant';
import type { Counts, CountsCoverage } from './types';

export type PublishCounts = (tenantId: string, counts: Counts, coverage: CountsCoverage) => void;

export class CountsPublisher {
  /** Instances whose counts changed since they were last published, with their tenant when known. */
  private readonly changed = new Map<string, string | undefined>();

  constructor(
    private readonly publish: PublishCounts,
    private readonly find: (instanceId: string, tenantId?: string) => InstanceRuntime | undefined,
  ) {}

  countsChanged(instanceId: string, tenantId?: string): void {
    if (this.changed.size === 0) queueMicrotask(() => this.flush());
    this.changed.set(instanceId, tenantId);
  }

  private flush(): void {
    const changed = [...this.changed];
    this.changed.clear();
    for (const [instanceId, tenantId] of changed) {
      const instance = this.find(instanceId, tenantId);
      if (!instance) continue;
      this.publish(instance.record.tenantId, instance.counts(), {
        held: instance.shards.flatMap((shard, p) => (shard ? [p] : [])),
        partitions: instance.shards.length,
      });
    }
  }
}
