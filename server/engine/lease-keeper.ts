// Keeps every partition lease of the engine alive with one loop for the process, not one per partition: an idle
// partition costs nothing between events. Leases are renewed every third of their length, in a few statements for
// all of them (store/leases.ts `renewLeases`); a lease found lost is handed back to its worker, which stops writing.
import { Wakeup, type Clock } from '../clock';
import type { Database } from '../storage/database';
import { renewLeases, type Lease } from './store/leases';

/** What the keeper needs of a partition worker. */
export interface LeaseHolder {
  readonly lease: Lease | null;
  /** The lease was taken over or expired: stop writing the partition and try to take it again later. */
  leaseLost(lease: Lease): void;
}

export interface LeaseKeeperHost {
  /** Wall time: lease times are compared by other processes with their own clocks. */
  readonly wallClock: Clock;
  readonly database: Database;
  readonly owner: string;
  readonly leaseMs: number;
  holders(): Iterable<LeaseHolder>;
}

export class LeaseKeeper {
  private readonly wakeup = new Wakeup();
  private loop: Promise<void> | undefined;
  private running = false;

  constructor(private readonly host: LeaseKeeperHost) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeup.wake();
    await this.loop;
  }

  /** Renews every held lease now; resolves when done (the loop does this every third of a lease). */
  async renewAll(): Promise<void> {
    const held = new Map<Lease, LeaseHolder>();
    for (const holder of this.host.holders()) if (holder.lease) held.set(holder.lease, holder);
    if (held.size === 0) return;
    const lost = await renewLeases(this.host.database, this.host.owner, [...held.keys()], this.host.wallClock.now(), this.host.leaseMs);
    for (const lease of lost) {
      const holder = held.get(lease)!;
      if (holder.lease === lease) holder.leaseLost(lease); // not handed off or retaken meanwhile
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      const signal = this.wakeup.signal();
      await this.host.wallClock.sleep(this.host.leaseMs / 3, signal);
      if (!this.running) return;
      await this.renewAll().catch((error) => console.error('[crowdflow] renewing partition leases failed; retrying', error));
    }
  }
}
