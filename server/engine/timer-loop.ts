// The engine's timer loop: sleeps on the engine clock until the earliest timer of any partition it holds is due
// (cron steps, delay and ttl buckets, stopAt), runs every due timer of a tenant in one tick (timers.ts), samples the
// counts history once a minute (a loop of its own on the same clock) and does the hourly housekeeping. A commit that moved users or a new instance wakes
// it (`wake`), since either can bring a timer forward.
import { LoopIdle, sleepUntilAborted, Wakeup, type Clock } from '../clock';
import type { Database } from '../storage/database';
import { CountsSampler, downsampleCountsHistory, MINUTE_MS, type SampledInstance } from './counts-history';
import type { LoadedTenant } from './loaded-tenants';
import { LogTrimmer } from '../storage/event-log';
import { Mutex } from './tenant';
import type { Counts } from './types';
import { firingWaits, nextTimerDue, runDueTimers, warmNextFirings } from './timers';
import { applyJournalRetention } from './journal-retention';

/** The loop re-plans at least this often (engine clock), so nothing is missed for long. */
const MAX_TIMER_SLEEP_MS = 60 * 60 * 1000;
const HOUSEKEEPING_EVERY_MS = 60 * 60 * 1000;
/**
 * The first housekeeping runs this long after the tenants listed at start are loaded: a restart's recovery and its
 * first counts go first. Its scans of the journal (rows per tenant, then each tenant's retention chunk) took 0.5-1.0 s
 * over a 1M-move journal on SQLite, whose driver runs them on the engine thread itself: run at once, they held up the
 * recovered counts (restart bench).
 */
const FIRST_HOUSEKEEPING_AFTER_MS = 5 * 60 * 1000;

/** What the loop needs of its engine. */
export interface TimerHost {
  readonly clock: Clock;
  readonly database: Database;
  /** The tenants loaded now (one still loading is left out; its load wakes the loop). */
  tenants(): Promise<LoadedTenant[]>;
  /**
   * Resolves once the tenants listed at the engine's start are loaded: housekeeping waits for it (and then
   * FIRST_HOUSEKEEPING_AFTER_MS more).
   */
  recovered(): Promise<void>;
  /** The tenant, if it is loaded. */
  loadedTenant(id: string): LoadedTenant | undefined;
  /** The instances whose counts history this process samples, each with its counts over every partition. */
  sampledInstances(): SampledInstance[];
  /** Told each instance's counts as sampled (whole, once a minute of the clock): experiments decide on them. */
  countsSampled?(instanceId: string, counts: Counts, now: number): Promise<void>;
}

export class TimerLoop {
  private readonly wakeup = new Wakeup();
  private readonly tick = new Mutex();
  private loop: Promise<void> | undefined;
  private running = false;
  /** Infinite until the host has recovered (`TimerHost.recovered`): no housekeeping before, and the first a while after. */
  private housekeptAt = Number.POSITIVE_INFINITY;
  /** Each loaded tenant's earliest due timer, as last planned. */
  private readonly plannedDue = new Map<string, number>();
  /** Tenants to plan anew (woken for them), or all of them. */
  private readonly toPlan = new Set<string>();
  private planAll = true;
  private readonly logTrimmer: LogTrimmer;
  private readonly countsSampler: CountsSampler;
  /** The counts sampler: its own loop on the engine clock, woken when the instances to sample change (instancesChanged). */
  private sampling: Promise<void> | undefined;
  private readonly samplerWakeup = new Wakeup();
  private readonly samplerIdle: LoopIdle;

  constructor(private readonly host: TimerHost) {
    this.logTrimmer = new LogTrimmer(host.database);
    this.countsSampler = new CountsSampler(host.database, host.countsSampled?.bind(host));
    this.samplerIdle = new LoopIdle(host.clock);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.housekeptAt = Number.POSITIVE_INFINITY;
    void this.host
      .recovered()
      .catch(() => undefined) // a tenant that failed to load loads when next used: housekeeping need not wait for it
      .then(() => {
        this.housekeptAt = this.host.clock.now() - HOUSEKEEPING_EVERY_MS + FIRST_HOUSEKEEPING_AFTER_MS;
        this.wakeup.wake();
      });
    this.loop = this.run();
    this.samplerIdle.started();
    this.sampling = this.sampleEveryMinute().finally(() => this.samplerIdle.stopped());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    this.samplerWakeup.wake();
    await this.loop;
    await this.sampling;
  }

  /**
   * Something may have brought a timer of the tenant (of every tenant, without one) forward: plan again now. Only the
   * tenants named since the last plan are planned anew; the others' planned times stand (a restart loading 1,000
   * tenants woke the loop once per tenant, and each plan walked every loaded partition).
   */
  wake(tenantId?: string): void {
    if (tenantId === undefined) this.planAll = true;
    else this.toPlan.add(tenantId);
    this.wakeup.wake();
  }

  /**
   * An instance to sample may be new (started, loaded, or a tenant's last partition taken): the sampler samples it at
   * once. Commits do not wake it: during a restart of 1,000 tenants every partition's first commits did, for ~1.4 s of
   * the engine thread walking every instance's counts.
   */
  instancesChanged(): void {
    this.samplerWakeup.wake();
  }

  /** Resolves once the counts sampler sleeps until a later time of the engine clock (tests, after moving it). */
  samplerSettled(): Promise<void> {
    return this.samplerIdle.settled();
  }

  /**
   * Runs every due timer now, then samples counts where due (the loop does this by itself; tests call it after moving
   * a ManualClock). One tick at a time: which tenants are due is read outside their locks, so a tick must not look
   * while another is between firing a tenant in memory and committing it.
   */
  runDue(): Promise<void> {
    return this.tick.run(async () => {
      const tenants = (await this.host.tenants()).map(({ runtime, workers }) => ({ id: runtime.id, workers }));
      await runDueTimers(tenants, this.host.clock.now());
      this.planAll = true; // what fired has its next firings
      await this.countsSampler.sampleIfDue(this.host.clock.now(), this.host.sampledInstances());
    });
  }

  /** History snapshots are kept 7 days (their expiresAt); the loop removes expired ones hourly. */
  async removeExpiredSnapshots(now: number): Promise<number> {
    return (await this.host.database.db.instanceSnapshot.deleteMany({ where: { expiresAt: { lt: new Date(now) } } })).count;
  }

  private async run(): Promise<void> {
    const clock = this.host.clock;
    while (this.running) {
      const signal = this.wakeup.signal();
      try {
        let due = await this.plan();
        const now = clock.now();
        if (now - this.housekeptAt >= HOUSEKEEPING_EVERY_MS) await this.housekeeping(now);
        due = Math.min(due, this.housekeptAt + HOUSEKEEPING_EVERY_MS);
        if (due <= now) await this.runDue();
        else await sleepUntilAborted(clock, Math.min(due - clock.now(), MAX_TIMER_SLEEP_MS), signal);
      } catch (error) {
        console.error('[crowdflow] timer loop failed; retrying in 1 s', error);
        await clock.sleep(1_000, signal);
      }
    }
  }

  /**
   * The earliest due timer of any tenant: planned anew for the tenants woken for since the last plan (whose next
   * firings are then worked out ahead: warmNextFirings), or for all of them after a firing; as planned before for the
   * others. A tenant whose firing waits for a lease is left out until taking the lease wakes the loop for it.
   */
  private async plan(): Promise<number> {
    const woken = [...this.toPlan];
    this.toPlan.clear();
    if (this.planAll) {
      this.planAll = false;
      this.plannedDue.clear();
      for (const tenant of await this.host.tenants()) this.planTenant(tenant.runtime.id, tenant);
    } else for (const id of woken) this.planTenant(id, this.host.loadedTenant(id));
    let due = Number.POSITIVE_INFINITY;
    for (const at of this.plannedDue.values()) due = Math.min(due, at);
    return due;
  }

  private planTenant(id: string, tenant: LoadedTenant | undefined): void {
    if (!tenant || firingWaits(tenant.workers)) {
      this.plannedDue.delete(id);
      return;
    }
    let at = Number.POSITIVE_INFINITY;
    for (const worker of tenant.workers) at = Math.min(at, nextTimerDue(worker) ?? at);
    for (const worker of tenant.workers) warmNextFirings(worker);
    this.plannedDue.set(id, at);
  }

  /**
   * Samples the counts at each minute of the engine clock while there are instances to sample; with none it sleeps
   * until woken (a new instance, a partition taken) or for the re-plan interval.
   */
  private async sampleEveryMinute(): Promise<void> {
    const clock = this.host.clock;
    while (this.running) {
      const signal = this.samplerWakeup.signal();
      const instances = this.host.sampledInstances();
      await this.countsSampler.sampleIfDue(clock.now(), instances).catch((error) => console.error('[crowdflow] sampling counts failed', error));
      const now = clock.now();
      // Coarse: a ManualClock moved by days wakes it once, at the end, rather than at every minute on the way.
      await this.samplerIdle.sleep(instances.length > 0 ? MINUTE_MS - (now % MINUTE_MS) : MAX_TIMER_SLEEP_MS, signal, { coarse: true });
    }
  }

  /** Hourly: expired history snapshots, journal entries past each tenant's retention (age and size), and event log rows
   * every partition had applied by the previous run. */
  private async housekeeping(now: number): Promise<void> {
    this.housekeptAt = now;
    await this.removeExpiredSnapshots(now);
    await applyJournalRetention(this.host.database, this.host.clock);
    await downsampleCountsHistory(this.host.database, now);
    for (const { runtime } of await this.host.tenants()) await this.logTrimmer.run(runtime.id);
  }
}
