// Who is alive, through PostgreSQL alone (the engine thread's side). Each process holds its membership from its
// request thread (./member-lock.ts: a session advisory lock, a ClusterMember row and a heartbeat); this side reads
// the live members (lock held, heartbeat fresh, not draining), marks this member draining on SIGTERM, and listens on
// the schema's LISTEN/NOTIFY channel where members announce joins, leaves, handoffs, gathers and new events.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { PostgresTarget } from '../storage/database-url';
import { connectClient, QueryQueue } from '../storage/pg-connect';
import { reconnectUntilClosed } from './reconnect';

/** A member whose heartbeat is older than this is not live, even while its lock is held (a hung process). */
export const HEARTBEAT_STALE_MS = 15_000;

/**
 * What members tell each other on the channel: a change of membership, a partition handed back, a gather (these
 * make members assign again), events appended for a tenant (its owners read the log now), counts and notices.
 */
export type ClusterSignal =
  | { kind: 'members' | 'released' | 'gather'; from: string; tenantId?: string }
  | { kind: 'events'; from: string; tenantId: string }
  | { kind: 'counts' | 'notice'; from?: string };

/** The NOTIFY channel of a schema: every process on the same schema listens on it (channels are database-wide). */
export function clusterChannel(target: PostgresTarget): string {
  return `crowdflow_${createHash('sha1').update(target.schema).digest('hex').slice(0, 16)}`;
}

/** The advisory lock namespace (first key) of a schema's members, so test schemas on one database stay apart. */
export function lockNamespace(target: PostgresTarget): number {
  return createHash('sha1').update(`crowdflow-member:${target.schema}`).digest().readUInt32BE(0) & 0x7fffffff;
}

export const DB_NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export class Membership {
  private client: pg.Client | undefined;
  private closed = false;
  private listenedBefore = false;
  /** Rebalance ticks, lease takeovers (isGone) and signals share the connection: one query at a time. */
  private readonly queries = new QueryQueue();
  private readonly table: string;
  private readonly channel: string;
  private readonly namespace: number;

  constructor(
    private readonly target: PostgresTarget,
    readonly name: string,
    private readonly onSignal: (signal: ClusterSignal) => void,
    /** Listening again after the channel's connection was lost: signals sent meanwhile were missed. */
    private readonly onRelistened: () => void = () => undefined,
  ) {
    this.table = `"${target.schema.replace(/"/g, '""')}"."ClusterMember"`;
    this.channel = clusterChannel(target);
    this.namespace = lockNamespace(target);
  }

  /** Connects and listens on the channel (the membership itself is held by the request thread's MemberLock). */
  async join(): Promise<void> {
    this.closed = false;
    await this.listen();
  }

  private async listen(): Promise<void> {
    const client = await connectClient(this.target.connectionString, 'cluster channel', () => this.closed);
    client.on('error', (error) => console.warn('[crowdflow] cluster channel connection lost:', error.message));
    client.on('end', () => this.reconnectLater(client));
    client.on('notification', (message) => {
      if (message.channel !== this.channel || !message.payload) return;
      try {
        this.onSignal(JSON.parse(message.payload) as ClusterSignal);
      } catch (error) {
        console.warn('[crowdflow] unreadable cluster signal', error);
      }
    });
    try {
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    // Left while connecting: a listener kept now would outlive the member.
    if (this.closed) return void (await client.end().catch(() => undefined));
    const relistened = this.listenedBefore;
    this.client = client;
    this.listenedBefore = true;
    if (relistened) this.onRelistened();
  }

  private reconnectLater(client: pg.Client): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    reconnectUntilClosed(
      () => this.listen(),
      () => this.closed,
      'cluster channel',
    );
  }

  /**
   * The members that should own partitions now, sorted: lock held, heartbeat fresh, not draining. Rows of members
   * whose lock is gone are deleted on the way (they are dead: a member takes its lock before it writes its row).
   */
  async liveMembers(): Promise<string[]> {
    const client = this.client;
    if (!client) return [];
    await this.queries.run(client, `DELETE FROM ${this.table} m WHERE NOT ${this.lockHeld('m')}`, [this.namespace]);
    const { rows } = await this.queries.run<{ name: string }>(
      client,
      `SELECT m."name" FROM ${this.table} m WHERE NOT m."draining" AND m."heartbeatMs" > ${DB_NOW_MS} - ${HEARTBEAT_STALE_MS} ORDER BY m."name"`,
    );
    return rows.map((r) => r.name);
  }

  /** Whether no live process holds the lock of a member of that name (its leases can be taken at once). */
  async isGone(name: string): Promise<boolean> {
    const client = this.client;
    if (!client) return false;
    const { rows } = await this.queries.run<{ live: boolean }>(
      client,
      `SELECT EXISTS (SELECT 1 FROM ${this.table} m WHERE m."name" = $2 AND ${this.lockHeld('m')} AND m."heartbeatMs" > ${DB_NOW_MS} - ${HEARTBEAT_STALE_MS}) AS "live"`,
      [this.namespace, name],
    );
    return !rows[0].live;
  }

  /** SQL: the advisory lock of member row `alias` is held by some session of this database ($1 = the namespace). */
  private lockHeld(alias: string): string {
    return `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = $1::int4::oid AND l.objid = ${alias}."lockKey"::oid)`;
  }

  /** Leaving soon (SIGTERM): the others stop counting on this member while it hands its partitions back. */
  async drain(): Promise<void> {
    if (this.client) await this.queries.run(this.client, `UPDATE ${this.table} SET "draining" = true WHERE "name" = $1`, [this.name]);
    await this.signal({ kind: 'members', from: this.name });
  }

  /** Stops listening (the request thread's MemberLock then leaves, once the engine handed its partitions back). */
  async leave(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** Tells every member (this one included) on the channel. */
  async signal(signal: ClusterSignal): Promise<void> {
    if (this.client) await this.queries.run(this.client, 'SELECT pg_notify($1, $2)', [this.channel, JSON.stringify(signal)]);
  }

  /** A query on the membership connection (the gather row, the tenant list). */
  async query<Row extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<Row[]> {
    if (!this.client) throw new Error('not connected to the cluster');
    return (await this.queries.run<Row>(this.client, sql, params)).rows;
  }
}
