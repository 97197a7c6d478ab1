// Keeps every partition lease of the engine alive with one loop for the process, not one per partition: an idle
// partition costs nothing between events. Leases are renewed every third of their length in one statement for all of
// them (server/storage/journal/leases.ts `renewLeases`); a lease found lost is handed back to its worker, which stops
// writing. Workers say when they take or give up a lease (`track`), so a renewal only counts them: walking 8,000
// workers of 1,000 tenants every 5 s to collect their leases was most of an idle engine thread's time.
import { Wakeup, type Clock } from '../clock';
import type { Database } from '../storage/database';
import { renewLeases, type Lease } from '../storage/journal/leases';

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
}

export class LeaseKeeper {
  private readonly wakeup = new Wakeup();
  private loop: Promise<void> | undefined;
  private running = false;
  /** The workers holding their partition's lease now. */
  private readonly holders = new Set<LeaseHolder>();

  constructor(private readonly host: LeaseKeeperHost) {}

  /** The worker took (`held`) or gave up its lease. */
  track(holder: LeaseHolder, held: boolean): void {
    if (held) this.holders.add(holder);
    else this.holders.delete(holder);
  }

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
    if (this.holders.size === 0) return;
    const lost = await renewLeases(
      this.host.database,
      this.host.owner,
      this.holders.size,
      () => this.heldLeases(),
      this.host.wallClock.now(),
      this.host.leaseMs,
    );
    for (const { lease, holder } of lost) if (holder.lease === lease) holder.leaseLost(lease); // not handed off or retaken meanwhile
  }

  private heldLeases(): { lease: Lease; holder: LeaseHolder }[] {
    return [...this.holders].flatMap((holder) => (holder.lease ? [{ lease: holder.lease, holder }] : []));
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
