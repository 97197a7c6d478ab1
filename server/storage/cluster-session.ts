// A PostgreSQL session of the cluster's own (server/cluster/: the membership lock and heartbeat, a channel's LISTEN):
// one connection outside the pools, because a session advisory lock and a LISTEN belong to the session that took
// them, and a transaction-pooling PgBouncer would hand the pool's connections to others (docs/cluster.md "Behind
// PgBouncer"). Its queries run one at a time (QueryQueue): a member asks from timers, signals and takeovers at once.
// The cluster's storage operations run on it (./membership.ts, ./gathers.ts).
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Database } from './database';
import type { PostgresTarget } from './database-url';
import { connectClient, QueryQueue } from './pg-connect';

/** The NOTIFY channel of a schema: every process on the same schema listens on it (channels are database-wide). */
export function clusterChannel(target: PostgresTarget): string {
  return `crowdflow_${createHash('sha1').update(target.schema).digest('hex').slice(0, 16)}`;
}

/** The advisory lock namespace (first key) of a schema's members, so test schemas on one database stay apart. */
function lockNamespace(target: PostgresTarget): number {
  return createHash('sha1').update(`crowdflow-member:${target.schema}`).digest().readUInt32BE(0) & 0x7fffffff;
}

/** The longest payload sent on the channel: PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
export const MAX_CHANNEL_PAYLOAD = 7_000;

/** Tells every member listening on the channel, on a pooled connection (a notice needs no session of its own). */
export async function notifyOnPool(database: Database, channel: string, payload: string): Promise<void> {
  await (await database.raw()).query('SELECT pg_notify($1, $2)', [channel, payload]);
}

/** The database's time in ms: members compare heartbeats and holds on one clock, whatever their machines' say. */
export const DB_NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** What the session's owner hears of its connection. */
export interface SessionEvents {
  /** The connection failed (it ends next). */
  failed(error: Error): void;
  /** The connection ended: dropped by PostgreSQL or the network, or by `end()`. */
  ended(): void;
  /** A payload on the schema's cluster channel, once `listen()` was called. */
  heard?(payload: string): void;
}

export class ClusterSession {
  /** The schema's channel, and the namespace of its members' advisory locks. */
  readonly channel: string;
  readonly lockNamespace: number;
  private readonly queries = new QueryQueue();
  private readonly schema: string;

  private constructor(
    private readonly client: pg.Client,
    target: PostgresTarget,
  ) {
    this.channel = clusterChannel(target);
    this.lockNamespace = lockNamespace(target);
    this.schema = `"${target.schema.replace(/"/g, '""')}"`;
  }

  /**
   * Connects (waiting out PostgreSQL's refusals until `isClosed()` says the owner gave up), naming the connection
   * `use` in pg_stat_activity, and reports its failure, end and the channel's payloads to `events`.
   */
  static async open(target: PostgresTarget, use: string, events: SessionEvents, isClosed: () => boolean): Promise<ClusterSession> {
    const client = await connectClient(target.connectionString, use, isClosed);
    const session = new ClusterSession(client, target);
    client.on('error', (error) => events.failed(error));
    client.on('end', () => events.ended());
    const { heard } = events;
    if (heard) {
      client.on('notification', (message) => {
        if (message.channel === session.channel && message.payload) heard(message.payload);
      });
    }
    return session;
  }

  /** A table of the schema, for this folder's SQL. */
  table(name: string): string {
    return `${this.schema}."${name}"`;
  }

  /** Runs a statement after the ones asked before it (the cluster's operations in this folder). */
  run<Row extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<pg.QueryResult<Row>> {
    return this.queries.run<Row>(this.client, sql, params);
  }

  /** Starts hearing the schema's channel (asked before any other query, so not queued). */
  async listen(): Promise<void> {
    await this.client.query(`LISTEN "${this.channel}"`);
  }

  /** Tells every session listening on the schema's channel (this one included). */
  async notify(payload: string): Promise<void> {
    await this.run('SELECT pg_notify($1, $2)', [this.channel, payload]);
  }

  /** Closes the connection (a session lock it held goes with it); never throws. */
  async end(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}
