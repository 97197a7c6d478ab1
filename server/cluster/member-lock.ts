// This process's membership in the cluster, held by the request thread: a session-level advisory lock on a connection
// of its own for as long as the process lives (PostgreSQL drops it the moment that connection ends: a SIGKILLed
// process's socket is closed by the kernel, so its backend exits at once), a ClusterMember row naming the member and
// its lock key, and a heartbeat every second that catches a process hanging with its connection open. The request
// thread holds it, not the engine thread, whose work can keep its loop busy for seconds (a 10M start, a checkpoint
// of a big shard): the request thread's loop stays under a second (issue 13), so a busy engine never looks dead and
// loses its partitions. A hung one must, though: the heartbeat stops while the engine thread has not answered for
// far longer than any slice of its work takes (`engineResponsive`), so the others take its partitions over. The
// engine thread's side (./membership.ts) only reads who is live and listens for signals. The statements are storage
// operations (server/storage/membership.ts).
import { randomInt } from 'node:crypto';
import { sleepUntilAborted, systemClock, type Clock } from '../clock';
import { ClusterSession } from '../storage/cluster-session';
import type { PostgresTarget } from '../storage/database-url';
import { beatMemberRow, removeMember, tryMemberLock, writeMemberRow } from '../storage/membership';
import type { ClusterSignal } from './membership';
import { reconnectUntilClosed } from './reconnect';

const HEARTBEAT_EVERY_MS = 1_000;

export class MemberLock {
  /** Heartbeats, a reconnect's lock and row, signals and the release share it: its queries run one at a time. */
  private session: ClusterSession | undefined;
  private lockKey = 0;
  /** Ends the heartbeat loop's sleep on release; undefined while no loop runs. */
  private heartbeat: AbortController | undefined;
  private closed = false;

  private skippedBeats = 0;
  private beating: Promise<void> = Promise.resolve();

  constructor(
    private readonly target: PostgresTarget,
    readonly name: string,
    /** Whether this process can still do its partitions' work (its engine thread answers): no heartbeat while not. */
    private readonly engineResponsive: () => boolean = () => true,
    /** What the heartbeat waits on (a test moves a ManualClock and awaits `beat()`). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Connects, takes a lock key of its own, writes the member row and says so on the channel. */
  async hold(): Promise<void> {
    this.closed = false;
    await this.acquire();
  }

  private async acquire(): Promise<void> {
    const session: ClusterSession = await ClusterSession.open(
      this.target,
      'cluster membership',
      {
        failed: (error) => console.warn('[crowdflow] cluster membership connection lost:', error.message),
        ended: () => this.reconnectLater(session),
      },
      () => this.closed,
    );
    // Released while connecting (release() found no connection to end): joining now would bring a left member back.
    if (this.closed) return void (await session.end());
    this.session = session;
    try {
      for (;;) {
        this.lockKey = randomInt(1, 0x7fffffff);
        if (await tryMemberLock(session, this.lockKey)) break;
      }
      await writeMemberRow(session, this.name, this.lockKey);
    } catch (error) {
      // Half joined: let the connection (and any lock it took) go, so the next attempt starts clean.
      if (this.session === session) this.session = undefined;
      await session.end();
      throw error;
    }
    if (this.closed) return; // released meanwhile: it took the row, the lock and the connection
    if (!this.heartbeat) void this.heartbeatLoop((this.heartbeat = new AbortController()).signal);
    await this.signal({ kind: 'members', from: this.name });
  }

  /**
   * One heartbeat, run after the one before it (heartbeats never overlap); none while the engine does not
   * answer, so the member turns stale and is left out of the assignment.
   */
  beat(): Promise<void> {
    this.beating = this.beating.then(() => this.beatNow());
    return this.beating;
  }

  /** Resolves once the beat under way (if any) is done: a test moves the lock's ManualClock, then awaits this. */
  beatsSettled(): Promise<void> {
    return this.beating;
  }

  /** A beat every HEARTBEAT_EVERY_MS of the clock (not awaited: a slow beat does not push the next one back). */
  private async heartbeatLoop(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      await sleepUntilAborted(this.clock, HEARTBEAT_EVERY_MS, stop);
      if (!stop.aborted) void this.beat();
    }
  }

  private async beatNow(): Promise<void> {
    const session = this.session;
    if (!session) return;
    if (!this.engineResponsive()) {
      if (this.skippedBeats++ === 0) console.warn('[crowdflow] the engine thread does not answer: no cluster heartbeat until it does');
      return;
    }
    this.skippedBeats = 0;
    try {
      // False: removed as dead while this process stalled.
      if (!(await beatMemberRow(session, this.name, this.lockKey)) && !this.closed) await writeMemberRow(session, this.name, this.lockKey);
    } catch (error) {
      if (!this.closed) console.warn('[crowdflow] cluster heartbeat failed:', (error as Error).message);
    }
  }

  private reconnectLater(session: ClusterSession): void {
    if (this.closed || this.session !== session) return;
    this.session = undefined;
    reconnectUntilClosed(
      () => this.acquire(),
      () => this.closed,
      'cluster membership',
    );
  }

  /** Leaves: the row goes, the lock is released and the others are told (after the engine handed its partitions back). */
  async release(): Promise<void> {
    this.closed = true;
    this.heartbeat?.abort();
    this.heartbeat = undefined;
    const session = this.session;
    this.session = undefined;
    if (!session) return;
    try {
      await removeMember(session, this.name, this.lockKey);
      await session.notify(JSON.stringify({ kind: 'members', from: this.name } satisfies ClusterSignal));
    } finally {
      await session.end();
    }
  }

  private async signal(signal: ClusterSignal): Promise<void> {
    if (this.session) await this.session.notify(JSON.stringify(signal));
  }
}
