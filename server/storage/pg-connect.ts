// Every PostgreSQL connection this process opens, pooled or its own, is opened here. PostgreSQL's connections are a
// budget shared by every member of a cluster (`max_connections`, a role's or a database's CONNECTION LIMIT, a
// PgBouncer's pool): a member started beside others, or a moment when they all hold many, is refused with
// `53300 too many clients`. A refusal says "not now", not "never", so it is waited out with backoff, at start (the
// migrations, the cluster's own connections) as later (a pool opening one more): the work that asked waits, as it
// waits for a free connection of a full pool, instead of the process exiting or the work failing.
import { isMainThread } from 'node:worker_threads';
import pg from 'pg';

/**
 * How PostgreSQL says "not now" to a new connection: too many connections (53300: the server's, a role's or a
 * database's limit), a configuration limit (53400), starting up or shutting down (57P03 cannot connect now); and
 * nothing listening (ECONNREFUSED: the server restarting).
 */
const REFUSALS: ReadonlySet<string> = new Set(['53300', '53400', '57P03', 'ECONNREFUSED']);

const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 5_000;

export function isConnectionRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && REFUSALS.has(code);
}

/**
 * The `application_name` of this process's connections: `crowdflow <pid> <thread> <use>`, so `pg_stat_activity`
 * tells the members, their threads and what each connection is for apart (docs/cluster.md "PostgreSQL connections" counts them this way).
 */
export function applicationName(use: string): string {
  return `crowdflow ${process.pid} ${threadName()} ${use}`.slice(0, 63);
}

const threadName = () => (isMainThread ? 'request' : 'engine');

/** How the log names a connection: its use and thread. */
const labelOf = (use: string) => `${use} (${threadName()} thread)`;

/** Connection settings for `use` (see applicationName). */
export function connectionConfig(connectionString: string, use: string): pg.ClientConfig {
  return { connectionString, application_name: applicationName(use) };
}

/**
 * Runs `attempt` (opening a connection) until PostgreSQL accepts it: after a refusal, again after a pause that grows
 * from 100 ms to 5 s (with jitter, so members refused together do not come back together). Any other error, or a
 * refusal once `isClosed()` says the owner gave up, is thrown. Says once that it waits, and when it got through.
 */
export async function connectPatiently<T>(attempt: () => Promise<T>, label: string, isClosed: () => boolean = () => false): Promise<T> {
  let waitingSince: number | undefined;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    try {
      const connected = await attempt();
      if (waitingSince !== undefined) console.warn(`[crowdflow] ${label}: PostgreSQL accepted the connection after ${Date.now() - waitingSince} ms of waiting`);
      return connected;
    } catch (error) {
      if (!isConnectionRefusal(error) || isClosed()) throw error;
      if (waitingSince === undefined) {
        waitingSince = Date.now();
        console.warn(`[crowdflow] ${label}: PostgreSQL refused a connection (${(error as Error).message}); waiting for one, trying again with backoff`);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, pause * (0.5 + Math.random() / 2)));
  }
}

/** A connected client of its own (not pooled), waiting out refusals; `isClosed` as for connectPatiently. */
export function connectClient(connectionString: string, use: string, isClosed?: () => boolean): Promise<pg.Client> {
  return connectPatiently(
    async () => {
      const client = new pg.Client(connectionConfig(connectionString, use));
      try {
        await client.connect();
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      return client;
    },
    labelOf(use),
    isClosed,
  );
}

/**
 * A pool whose new connections wait out refusals: a query or transaction that needs one more connection waits for
 * PostgreSQL to accept it, as it waits for a free connection when the pool is full, instead of failing. `pool.query`
 * goes through `connect` too.
 */
export class PatientPool extends pg.Pool {
  private readonly label: string;

  constructor(connectionString: string, use: string, max: number) {
    super({ ...connectionConfig(connectionString, use), max });
    this.label = labelOf(use);
  }

  /** Opens no connection past `max` from now on (any already open beyond it close after 10 s idle, as all do). */
  resize(max: number): void {
    this.options.max = max;
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
  override connect(
    callback?: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void,
  ): Promise<pg.PoolClient> | void {
    const connected = connectPatiently(
      () => super.connect(),
      this.label,
      () => this.ending,
    );
    if (!callback) return connected;
    connected.then(
      (client) => callback(undefined, client, (release) => client.release(release as Error | boolean | undefined)),
      (error: Error) => callback(error, undefined, () => undefined),
    );
  }
}

/**
 * The queries of one connection, run one at a time in the order asked. pg 8 queues overlapping queries on a client
 * itself but warns that pg 9 will refuse them (`DeprecationWarning: Calling client.query() when the client is already
 * executing a query`): the cluster's own connections are asked from timers, signals and lease takeovers at once.
 */
export class QueryQueue {
  private last: Promise<unknown> = Promise.resolve();

  run<Row extends pg.QueryResultRow>(client: pg.ClientBase, sql: string, params?: unknown[]): Promise<pg.QueryResult<Row>> {
    const result = this.last.then(() => client.query<Row>(sql, params));
    this.last = result.catch(() => undefined);
    return result;
  }
}
