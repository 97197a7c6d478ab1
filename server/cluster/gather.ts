// A tenant-wide instance operation (start, stop, crowd or workflow update) gathers the tenant's partitions on the
// member running it, so the operation still commits once (a ClusterGather row makes every member assign all of the
// tenant's partitions to the gatherer). Operations of one tenant on one member share one gather: it is counted, and
// let go when the last of them ends, so one cannot release the other's. While held it is renewed, so an operation
// longer than the hold keeps it; a member that dies holding it loses it at once (members ignore a dead gatherer) and
// a member that hangs loses it when the hold runs out.
import { sleepUntilAborted, systemClock, type Clock } from '../clock';
import type { PartitionWorker } from '../engine/partition';
import { RetryLaterError } from '../procedures/types';
import { claimGather, gatherHolder, releaseGather, renewGathers } from '../storage/gathers';
import type { Membership } from './membership';

/** A gather lasts this long past its last renewal. */
export const GATHER_HOLD_MS = 60_000;
/** A held gather is renewed this often. */
export const GATHER_RENEW_MS = 15_000;
/** How long an operation waits for the tenant's partitions to arrive before it is retried by its procedure. */
const GATHER_WAIT_MS = 15_000;
const GATHER_POLL_MS = 20;

type Held = { holders: number; claimed: Promise<void> };

export class Gathers {
  private readonly held = new Map<string, Held>();
  /** Ends the renewals (close). */
  private readonly closed = new AbortController();
  private renewing: Promise<void> | undefined;

  constructor(
    private readonly membership: Membership,
    private readonly assignAgain: () => void,
    /** What the renewals and the wait for partitions wait on. */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Renews the held gathers every GATHER_RENEW_MS until close(). */
  start(): void {
    this.renewing ??= this.renewEvery();
  }

  close(): void {
    this.closed.abort();
  }

  private async renewEvery(): Promise<void> {
    for (;;) {
      await sleepUntilAborted(this.clock, GATHER_RENEW_MS, this.closed.signal);
      if (this.closed.signal.aborted) return;
      await this.renew();
    }
  }

  /** How many operations hold the tenant's gather on this member (tests). */
  holders(tenantId: string): number {
    return this.held.get(tenantId)?.holders ?? 0;
  }

  /** Claims (or joins) the tenant's gather, waits for its partitions, and returns how to let go of it (once). */
  async gather(tenantId: string, workers: PartitionWorker[], waitMs: number): Promise<() => Promise<void>> {
    let held = this.held.get(tenantId);
    if (held) held.holders++;
    else {
      const claiming: Held = { holders: 1, claimed: this.claim(tenantId, waitMs) };
      claiming.claimed.catch(() => {
        if (this.held.get(tenantId) === claiming) this.held.delete(tenantId);
      });
      this.held.set(tenantId, (held = claiming));
    }
    const mine = held;
    try {
      await mine.claimed;
    } catch (error) {
      mine.holders--;
      throw error;
    }
    const deadline = this.clock.now() + GATHER_WAIT_MS;
    while (workers.some((w) => !w.lease) && this.clock.now() < deadline) await this.clock.sleep(GATHER_POLL_MS);
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      if (--mine.holders > 0) return;
      if (this.held.get(tenantId) === mine) this.held.delete(tenantId);
      // Queued on the membership connection before any later claim of this tenant, so it never deletes that one.
      await this.membership.onSession((session) => releaseGather(session, tenantId, this.membership.name));
      await this.membership.signal({ kind: 'gather', from: this.membership.name, tenantId });
      this.assignAgain();
    };
  }

  /** Writes the gather row unless another live member holds the tenant's gather. */
  private async claim(tenantId: string, waitMs: number): Promise<void> {
    const me = this.membership.name;
    const held = await this.membership.onSession((session) => gatherHolder(session, tenantId));
    const busy = () =>
      new RetryLaterError(`the partitions of tenant ${tenantId} are gathered by ${held?.member ?? 'another member'} for another instance operation`, {
        waitMs,
      });
    if (held && held.member !== me && held.current && !(await this.membership.isGone(held.member))) throw busy();
    // Compare-and-set on the row just read: two members claiming at once, one wins.
    const claimed = await this.membership.onSession((session) => claimGather(session, tenantId, me, held?.member ?? me, GATHER_HOLD_MS));
    if (!claimed) throw busy();
    await this.membership.signal({ kind: 'gather', from: me, tenantId });
    this.assignAgain();
  }

  /** Pushes the hold of every gather this member has out again (a gather taken over meanwhile is not touched). */
  async renew(): Promise<void> {
    const tenants = [...this.held.keys()];
    if (tenants.length === 0) return;
    await this.membership
      .onSession((session) => renewGathers(session, tenants, this.membership.name, GATHER_HOLD_MS))
      .catch((error: Error) => console.warn('[crowdflow] renewing gathers failed:', error.message));
  }
}
