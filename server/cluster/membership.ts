// Who is alive, through PostgreSQL alone. A member holds a session-level advisory lock on a connection of its own
// for as long as it lives: PostgreSQL drops the lock the moment that connection ends (a SIGKILLed process's socket is
// closed by the kernel, so its backend exits at once), which is what tells the others it is gone; a row in
// ClusterMember names the member and its lock key, and a heartbeat catches a member whose process hangs with its
// connection open. Members announce joins, leaves and handoffs on one LISTEN/NOTIFY channel per schema.
import { createHash, randomInt } from 'node:crypto';
import pg from 'pg';
import type { DatabaseTarget } from '../storage/database-url';

type PostgresTarget = Extract<DatabaseTarget, { provider: 'postgres' }>;

/** A member whose heartbeat is older than this is not live, even while its lock is held (a hung process). */
export const HEARTBEAT_STALE_MS = 15_000;
const HEARTBEAT_EVERY_MS = 1_000;
const RECONNECT_AFTER_MS = 1_000;

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
function lockNamespace(target: PostgresTarget): number {
  return createHash('sha1').update(`crowdflow-member:${target.schema}`).digest().readUInt32BE(0) & 0x7fffffff;
}

export const DB_NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export class Membership {
  private client: pg.Client | undefined;
  private lockKey = 0;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private closed = false;
  private readonly table: string;
  private readonly channel: string;
  private readonly namespace: number;

  constructor(
    private readonly target: PostgresTarget,
    readonly name: string,
    private readonly onSignal: (signal: ClusterSignal) => void,
  ) {
    this.table = `"${target.schema.replace(/"/g, '""')}"."ClusterMember"`;
    this.channel = clusterChannel(target);
    this.namespace = lockNamespace(target);
  }

  /** Connects, takes a lock key of its own, writes the member row and says so on the channel. */
  async join(): Promise<void> {
    const client = new pg.Client({ connectionString: this.target.connectionString });
    client.on('error', (error) => console.warn('[crowdflow] cluster membership connection lost:', error.message));
    client.on('end', () => this.reconnectLater(client));
    client.on('notification', (message) => {
      if (message.channel !== this.channel || !message.payload) return;
      try {
        this.onSignal(JSON.parse(message.payload) as ClusterSignal);
      } catch (error) {
        console.warn('[crowdflow] unreadable cluster signal', error);
      }
    });
    await client.connect();
    this.client = client;
    try {
      await client.query(`LISTEN "${this.channel}"`);
      for (;;) {
        this.lockKey = randomInt(1, 0x7fffffff);
        const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::int4, $2::int4) AS "locked"', [this.namespace, this.lockKey]);
        if (rows[0].locked) break;
      }
      await this.writeRow();
    } catch (error) {
      // Half joined: let the connection (and any lock it took) go, so the next attempt starts clean.
      if (this.client === client) this.client = undefined;
      await client.end().catch(() => undefined);
      throw error;
    }
    this.heartbeat ??= setInterval(() => void this.beat(), HEARTBEAT_EVERY_MS);
    this.heartbeat.unref();
    await this.signal({ kind: 'members', from: this.name });
  }

  private async writeRow(): Promise<void> {
    await this.client!.query(
      `INSERT INTO ${this.table} ("name", "lockKey", "draining", "heartbeatMs") VALUES ($1, $2, false, ${DB_NOW_MS})
       ON CONFLICT ("name") DO UPDATE SET "lockKey" = excluded."lockKey", "draining" = false, "heartbeatMs" = excluded."heartbeatMs"`,
      [this.name, this.lockKey],
    );
  }

  private async beat(): Promise<void> {
    try {
      const { rowCount } = await this.client!.query(`UPDATE ${this.table} SET "heartbeatMs" = ${DB_NOW_MS} WHERE "name" = $1 AND "lockKey" = $2`, [
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
    this.rejoinLater();
  }

  /** Tries to join again until it works: a member that gave up after one failed attempt would stay out for good. */
  private rejoinLater(): void {
    setTimeout(() => {
      if (this.closed) return;
      this.join().catch((error: Error) => {
        console.warn('[crowdflow] cluster membership could not reconnect:', error.message);
        this.rejoinLater();
      });
    }, RECONNECT_AFTER_MS).unref();
  }

  /**
   * The members that should own partitions now, sorted: lock held, heartbeat fresh, not draining. Rows of members
   * whose lock is gone are deleted on the way (they are dead: a member takes its lock before it writes its row).
   */
  async liveMembers(): Promise<string[]> {
    const client = this.client;
    if (!client) return [];
    await client.query(`DELETE FROM ${this.table} m WHERE NOT ${this.lockHeld('m')}`, [this.namespace]);
    const { rows } = await client.query<{ name: string }>(
      `SELECT m."name" FROM ${this.table} m WHERE NOT m."draining" AND m."heartbeatMs" > ${DB_NOW_MS} - ${HEARTBEAT_STALE_MS} ORDER BY m."name"`,
    );
    return rows.map((r) => r.name);
  }

  /** Whether no live process holds the lock of a member of that name (its leases can be taken at once). */
  async isGone(name: string): Promise<boolean> {
    const client = this.client;
    if (!client) return false;
    const { rows } = await client.query<{ live: boolean }>(
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
    await this.client?.query(`UPDATE ${this.table} SET "draining" = true WHERE "name" = $1`, [this.name]);
    await this.signal({ kind: 'members', from: this.name });
  }

  async leave(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      await client.query(`DELETE FROM ${this.table} WHERE "name" = $1`, [this.name]);
      await client.query('SELECT pg_advisory_unlock($1::int4, $2::int4)', [this.namespace, this.lockKey]);
      await client.query('SELECT pg_notify($1, $2)', [this.channel, JSON.stringify({ kind: 'members', from: this.name } satisfies ClusterSignal)]);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Tells every member (this one included) on the channel. */
  async signal(signal: ClusterSignal): Promise<void> {
    await this.client?.query('SELECT pg_notify($1, $2)', [this.channel, JSON.stringify(signal)]);
  }

  /** A query on the membership connection (the gather row, the tenant list). */
  async query<Row extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<Row[]> {
    if (!this.client) throw new Error('not connected to the cluster');
    return (await this.client.query<Row>(sql, params)).rows;
  }
}
