// This process's membership in the cluster, held by the request thread: a session-level advisory lock on a connection
// of its own for as long as the process lives (PostgreSQL drops it the moment that connection ends: a SIGKILLed
// process's socket is closed by the kernel, so its backend exits at once), a ClusterMember row naming the member and
// its lock key, and a heartbeat every second that catches a process hanging with its connection open. The request
// thread holds it, not the engine thread, whose work can keep its loop busy for seconds (a 10M start, a checkpoint
// of a big shard): the request thread's loop stays under a second (issue 13), so a busy engine never looks dead and
// loses its partitions. A hung one must, though: the heartbeat stops while the engine thread has not answered for
// far longer than any slice of its work takes (`engineResponsive`), so the others take its partitions over. The
// engine thread's side (./membership.ts) only reads who is live and listens for signals.
import { randomInt } from 'node:crypto';
import type pg from 'pg';
import { sleepUntilAborted, systemClock, type Clock } from '../clock';
import type { PostgresTarget } from '../storage/database-url';
import { connectClient, QueryQueue } from '../storage/pg-connect';
import { clusterChannel, DB_NOW_MS, lockNamespace, type ClusterSignal } from './membership';
import { reconnectUntilClosed } from './reconnect';

const HEARTBEAT_EVERY_MS = 1_000;

export class MemberLock {
  private client: pg.Client | undefined;
  private lockKey = 0;
  /** Ends the heartbeat loop's sleep on release; undefined while no loop runs. */
  private heartbeat: AbortController | undefined;
  private closed = false;
  private readonly table: string;
  private readonly channel: string;
  private readonly namespace: number;

  private skippedBeats = 0;
  private beating: Promise<void> = Promise.resolve();
  /** Heartbeats, a reconnect's lock and row, signals and the release share the connection: one query at a time. */
  private readonly queries = new QueryQueue();

  constructor(
    private readonly target: PostgresTarget,
    readonly name: string,
    /** Whether this process can still do its partitions' work (its engine thread answers): no heartbeat while not. */
    private readonly engineResponsive: () => boolean = () => true,
    /** What the heartbeat waits on (a test moves a ManualClock and awaits `beat()`). */
    private readonly clock: Clock = systemClock,
  ) {
    this.table = `"${target.schema.replace(/"/g, '""')}"."ClusterMember"`;
    this.channel = clusterChannel(target);
    this.namespace = lockNamespace(target);
  }

  /** Connects, takes a lock key of its own, writes the member row and says so on the channel. */
  async hold(): Promise<void> {
    this.closed = false;
    await this.acquire();
  }

  private async acquire(): Promise<void> {
    const client = await connectClient(this.target.connectionString, 'cluster membership', () => this.closed);
    client.on('error', (error) => console.warn('[crowdflow] cluster membership connection lost:', error.message));
    client.on('end', () => this.reconnectLater(client));
    // Released while connecting (release() found no connection to end): joining now would bring a left member back.
    if (this.closed) return void (await client.end().catch(() => undefined));
    this.client = client;
    try {
      for (;;) {
        this.lockKey = randomInt(1, 0x7fffffff);
        const { rows } = await this.queries.run<{ locked: boolean }>(client, 'SELECT pg_try_advisory_lock($1::int4, $2::int4) AS "locked"', [
          this.namespace,
          this.lockKey,
        ]);
        if (rows[0].locked) break;
      }
      await this.writeRow();
    } catch (error) {
      // Half joined: let the connection (and any lock it took) go, so the next attempt starts clean.
      if (this.client === client) this.client = undefined;
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) return; // released meanwhile: it took the row, the lock and the connection
    if (!this.heartbeat) void this.heartbeatLoop((this.heartbeat = new AbortController()).signal);
    await this.signal({ kind: 'members', from: this.name });
  }

  private async writeRow(): Promise<void> {
    await this.queries.run(
      this.client!,
      `INSERT INTO ${this.table} ("name", "lockKey", "draining", "heartbeatMs") VALUES ($1, $2, false, ${DB_NOW_MS})
       ON CONFLICT ("name") DO UPDATE SET "lockKey" = excluded."lockKey", "draining" = false, "heartbeatMs" = excluded."heartbeatMs"`,
      [this.name, this.lockKey],
    );
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
    const client = this.client;
    if (!client) return;
    if (!this.engineResponsive()) {
      if (this.skippedBeats++ === 0) console.warn('[crowdflow] the engine thread does not answer: no cluster heartbeat until it does');
      return;
    }
    this.skippedBeats = 0;
    try {
      const { rowCount } = await this.queries.run(client, `UPDATE ${this.table} SET "heartbeatMs" = ${DB_NOW_MS} WHERE "name" = $1 AND "lockKey" = $2`, [
        this.name,
        this.lockKey,
      ]);
      if (rowCount === 0 && !this.closed) await this.writeRow(); // removed as dead while this process stalled
    } catch (error) {
      if (!this.closed) console.warn('[crowdflow] cluster heartbeat failed:', (error as Error).message);
    }
  }

  private reconnectLater(client: pg.Client): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
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
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      await this.queries.run(client, `DELETE FROM ${this.table} WHERE "name" = $1`, [this.name]);
      await this.queries.run(client, 'SELECT pg_advisory_unlock($1::int4, $2::int4)', [this.namespace, this.lockKey]);
      await this.queries.run(client, 'SELECT pg_notify($1, $2)', [this.channel, JSON.stringify({ kind: 'members', from: this.name } satisfies ClusterSignal)]);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  private async signal(signal: ClusterSignal): Promise<void> {
    if (this.client) await this.queries.run(this.client, 'SELECT pg_notify($1, $2)', [this.channel, JSON.stringify(signal)]);
  }
}
