// Which storage failures go away by trying the same work again a moment later, for every part that retries (the
// procedure runner, and through it webhook deliveries). A transient error says nothing about the work itself: the
// database was out of connections, restarting, unreachable for a moment, too busy to answer in time, or chose this
// transaction as the loser of a conflict. Anything else (a constraint, a missing table, a bad value) fails the same
// way every time and is permanent.
//
// Errors arrive in three shapes, all of them looked at: Prisma's (`code` P1001…, with the driver adapter's mapped
// error in `meta.driverAdapterError.cause`: `kind`, and the database's own `originalCode`), the raw drivers' (pg's
// DatabaseError with a SQLSTATE `code`, Node's socket errors, better-sqlite3's SqliteError `code`), and pg-pool's plain
// Errors that carry only a message. Causes (`error.cause`) are followed, so a wrapped driver error counts too.

/** Prisma error codes: cannot reach (P1001, P1002), timed out (P1008: also SQLite's SQLITE_BUSY through the adapter),
 * connection closed (P1017), no pooled connection in time (P2024), write conflict or deadlock (P2034), too many
 * connections (P2037). P2028 only with the message of a transaction that could not start in time. */
const PRISMA_CODES: ReadonlySet<string> = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2034', 'P2037']);

/** The driver adapter's mapped kinds behind those codes (also inside P2010, a raw query's failure). */
const ADAPTER_KINDS: ReadonlySet<string> = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
]);

/** PostgreSQL SQLSTATEs: too many connections (53300), serialization failure (40001), deadlock (40P01), lock not
 * available (55P03: NOWAIT, lock_timeout), statement timeout (57014), shutting down or starting up (57P01 admin
 * shutdown, 57P02 crash shutdown, 57P03 cannot connect now). Class 08 (connection exceptions) is matched whole. */
const SQLSTATES: ReadonlySet<string> = new Set(['53300', '40001', '40P01', '55P03', '57014', '57P01', '57P02', '57P03']);

/** Node's socket errors on the way to the database. */
const SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** pg and pg-pool errors with no code: a connection that died under a query, or none free within the pool's wait. */
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

const MAX_DEPTH = 5;

type Inspected = { code?: unknown; originalCode?: unknown; kind?: unknown; message?: unknown; meta?: unknown; cause?: unknown };

/**
 * Whether retrying the whole operation (a new statement, a new transaction) may succeed where this attempt failed.
 * SQLite's SQLITE_BUSY_SNAPSHOT counts: it dooms the transaction it happened in (see sqlite-busy.ts), not a new one.
 */
export function isTransientStorageError(error: unknown): boolean {
  return transientCode(error, 0) !== null;
}

/**
 * The code that makes `error` transient (a Prisma code, SQLSTATE, adapter kind, socket or SQLite code), else undefined:
 * what an error crossing from the engine thread carries, so that it is classified the same on the other side.
 */
export function transientStorageCode(error: unknown): string | undefined {
  return transientCode(error, 0) ?? undefined;
}

/** The code that made `error` transient (a Prisma code, SQLSTATE, adapter kind, socket or SQLite code), else null. */
function transientCode(error: unknown, depth: number): string | null {
  if (typeof error !== 'object' || error === null || depth > MAX_DEPTH) return null;
  const { code, originalCode, kind, message, meta, cause } = error as Inspected;
  for (const candidate of [originalCode, code]) {
    if (typeof candidate !== 'string') continue;
    if (PRISMA_CODES.has(candidate) || SQLSTATES.has(candidate) || SOCKET_CODES.has(candidate) || /^08[0-9A-Z]{3}$/.test(candidate)) return candidate;
    // An error rebuilt on the request thread from one of the engine thread's carries the code found there.
    if (candidate === code && ADAPTER_KINDS.has(candidate)) return candidate;
    if (candidate.startsWith('SQLITE_BUSY') || candidate.startsWith('SQLITE_LOCKED')) return candidate;
    if (candidate === 'P2028' && typeof message === 'string' && message.includes('Unable to start a transaction in the given time')) return candidate;
  }
  if (typeof kind === 'string' && ADAPTER_KINDS.has(kind)) return kind;
  if (code === undefined && typeof message === 'string' && PG_MESSAGES.test(message)) return 'ConnectionClosed';
  const adapterError = (meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError;
  return transientCode(adapterError, depth + 1) ?? transientCode(cause, depth + 1);
}

/**
 * A one-line account of an error for logs and stored failures. A storage error gives the database's own message where
 * it carries one, else the last line of Prisma's (which starts with the call site and source lines, server paths a
 * tenant must not read), with its code; any other error its message.
 */
export function describeStorageError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const prisma = error.name.startsWith('PrismaClient');
  const adapter = (error as { meta?: { driverAdapterError?: { cause?: { originalMessage?: unknown; originalCode?: unknown } } } }).meta?.driverAdapterError
    ?.cause;
  const lastLine = error.message
    .split('\n')
    .findLast((line) => line.trim() !== '')
    ?.trim();
  const text = typeof adapter?.originalMessage === 'string' ? adapter.originalMessage : (prisma ? lastLine : error.message) || error.name;
  const code = adapter?.originalCode ?? transientCode(error, 0) ?? (prisma ? (error as { code?: unknown }).code : undefined);
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}

/** How long work done for a request keeps trying through transient storage errors before its caller sees one (503). */
export const REQUEST_STORAGE_PATIENCE_MS = 3_000;

/**
 * Runs `work` again after a transient storage error, with backoff (25 ms doubling to 400 ms, with jitter), for up to
 * `patienceMs`; any other error, or a transient one past the patience, is thrown. Only for work that a failed
 * attempt left undone: one transaction, or reads and then one transaction.
 */
export async function retryTransient<T>(work: () => Promise<T>, patienceMs = REQUEST_STORAGE_PATIENCE_MS): Promise<T> {
  const deadline = Date.now() + patienceMs;
  for (let pause = 25; ; pause = Math.min(pause * 2, 400)) {
    try {
      return await work();
    } catch (error) {
      if (!isTransientStorageError(error) || Date.now() + pause > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause * (0.5 + Math.random() / 2)));
  }
}
