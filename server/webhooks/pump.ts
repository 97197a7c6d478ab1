// The webhook pump of a server process (started by server/boot.ts, on the request thread beside the procedure
// runner): woken by its engine's commits (at most every `pollMs`), else every `idlePollMs` (other processes' commits,
// held deliveries coming due), it cuts new journal moves into deliveries for each destination behind the journal,
// then hands each delivery to the runner. Every process may run one: the cursor compare-and-set (./cut.ts) lets only
// one of them commit a round, and the loser reads again from the new cursor. A destination whose tenant had nothing
// new when the journal's newest seq was N is not read again until the journal grows past N (seqs are global, so
// another tenant's moves leave its cursor behind the newest seq), and the last bulk moves stay decoded between rounds.
import { LoopIdle, systemClock, Wakeup, type Clock } from '../clock';
import type { ProcedureRunner } from '../procedures/types';
import { compactCapped, dropOldCapWindows } from './capping';
import { commitRound, cutRound, DecodedMoves } from './cut';
import { registerWebhookProcedures, submitDeliveries, submitOrphans } from './deliveries';
import type { DestinationKey } from './destinations';
import { compactDroppedQuiet, dropSentQuiet, type ZoneGrouping } from './quiet-holding';
import { releaseDueQuiet } from './quiet-release';
import type { Database } from '../storage/database';
import { destinationsBehind } from '../storage/webhook-rows';

export const DEFAULT_POLL_MS = 250;
/** How often pending deliveries without a procedure (a crash between commit and submit) are looked for, and old
 * deliveries removed. */
const SWEEP_EVERY_MS = 60_000;
/** Delivered and failed deliveries stay in the log (and can be replayed) this long, like finished procedures. */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3_600_000;

export interface WebhookPumpOptions {
  database: Database;
  runner: ProcedureRunner;
  /** Where quiet hours group users by zone: the engine's profile calls (the engine thread holds the profile index). */
  zones?: ZoneGrouping;
  clock?: Clock;
  /** The shortest time between two rounds (DEFAULT_POLL_MS): commits in a burst wake the pump once per this. */
  pollMs?: number;
  /**
   * How long the pump sleeps when not woken (`wake()`, by its engine's commits): `pollMs` by default. Commits of
   * other processes and held deliveries coming due are noticed after it.
   */
  idlePollMs?: number;
  /** Whether every tenant's deliveries may reach private addresses (CROWDFLOW_WEBHOOK_ALLOW_PRIVATE); else only those
   * of tenants whose limit allows it (the default). */
  privateAddressesForEveryTenant?: boolean;
}

export class WebhookPump {
  private readonly database: Database;
  private readonly runner: ProcedureRunner;
  private readonly clock: Clock;
  private readonly pollMs: number;
  private readonly idlePollMs: number;
  private readonly wakeup = new Wakeup();
  private readonly idle: LoopIdle;
  private loop: Promise<void> | undefined;
  private stopping: AbortController | undefined;
  private lastSweep = -Infinity;
  /** Destinations whose last read found nothing, with the journal's newest seq at that read. */
  private readonly idleAt = new Map<string, bigint>();
  private readonly decoded: DecodedMoves;

  constructor(options: WebhookPumpOptions) {
    this.database = options.database;
    this.decoded = new DecodedMoves(options.database, options.zones);
    this.runner = options.runner;
    this.clock = options.clock ?? systemClock;
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.idlePollMs = Math.max(this.pollMs, options.idlePollMs ?? this.pollMs);
    this.idle = new LoopIdle(this.clock);
    registerWebhookProcedures(this.runner, options.privateAddressesForEveryTenant ?? false);
  }

  /** Sends held deliveries that are due, cuts and submits every destination's backlog; returns how many deliveries it made. */
  async pumpOnce(): Promise<number> {
    const now = this.clock.now();
    if (now - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = now;
      await submitOrphans(this.database, this.runner);
      await this.database.db.webhookDelivery.deleteMany({
        where: { status: { in: ['delivered', 'failed'] }, createdAt: { lt: new Date(now - DELIVERY_RETENTION_MS) } },
      });
      await dropOldCapWindows(this.database, now);
      await compactCapped(this.database);
      await dropSentQuiet(this.database);
      await compactDroppedQuiet(this.database);
    }
    // Deliveries quiet hours held whose window has opened in their zone (./quiet-release.ts).
    let cut = 0;
    for (const { tenantId, ids } of await releaseDueQuiet(this.database, now)) {
      await submitDeliveries(
        this.runner,
        ids.map((id) => ({ id, replays: 0 })),
        tenantId,
      );
      cut += ids.length;
    }
    const behind = await destinationsBehind(this.database);
    const live = new Set(behind.map(({ id }) => id));
    for (const id of this.idleAt.keys()) if (!live.has(id)) this.idleAt.delete(id);
    for (const { id, tenantId, newest } of behind) {
      if (this.idleAt.get(id) === newest) continue;
      cut += await this.pumpDestination({ id, tenantId }, newest);
    }
    return cut;
  }

  /** Rounds for one destination until it has read the journal through (or another process took over). */
  private async pumpDestination({ id, tenantId }: DestinationKey, newest: bigint): Promise<number> {
    let cut = 0;
    for (;;) {
      const destination = await this.database.db.webhookDestination.findUnique({ where: { id, tenantId }, include: { tenant: { select: { name: true } } } });
      if (!destination) return cut;
      const round = await cutRound(this.database, destination, destination.tenant.name, this.clock.now(), this.decoded);
      if (round.readRows === 0 && round.deliveries.length === 0) {
        this.idleAt.set(id, newest);
        return cut;
      }
      this.idleAt.delete(id);
      if (!(await commitRound(this.database, destination, round))) return cut;
      await submitDeliveries(
        this.runner,
        round.deliveries.map((d) => ({ id: d.id, replays: 0 })),
        destination.tenantId,
      );
      cut += round.deliveries.length;
      // Let requests in between rounds: a 10M-user move is cut over many of them.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  start(): void {
    if (this.loop) return;
    const stopping = (this.stopping = new AbortController());
    this.idle.started();
    this.loop = (async () => {
      while (!stopping.signal.aborted) {
        // Taken before the round: a commit during it is cut by the next one (stop() wakes it too).
        const woken = this.wakeup.signal();
        try {
          await this.pumpOnce();
        } catch (error) {
          console.error('[webhooks] pump round failed; trying again', error);
        }
        await this.idle.sleep(this.pollMs, stopping.signal);
        if (!stopping.signal.aborted) await this.idle.sleep(this.idlePollMs - this.pollMs, woken);
      }
    })().finally(() => this.idle.stopped());
  }

  async stop(): Promise<void> {
    this.stopping?.abort();
    this.wakeup.wake();
    await this.loop;
    this.loop = undefined;
  }

  /** Resolves once the loop sleeps until a later time of its clock (tests, after moving it). */
  settled(): Promise<void> {
    return this.idle.settled();
  }

  /** New journal moves (a commit of this process's engine): the next round comes at once, or `pollMs` after the last. */
  wake(): void {
    this.wakeup.wake();
  }
}
