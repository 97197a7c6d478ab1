// SQLite copies its write-ahead log into the database file ("checkpoints") inside whichever commit pushes the log
// past 1,000 pages: on our one connection, that is the event loop stalling for the copy and its fsync several times a
// second under load. A worker thread with its own connection checkpoints instead, without blocking the writer
// (PASSIVE), and the connection's own automatic checkpoint is raised to a backstop for a slow worker; a worker that
// dies hands checkpointing back to the writer.
// Measured (`npm run bench -- --only=engine,http --providers=sqlite`, two runs each): events end to end over HTTP
// 161,000–168,000 → 176,000–185,000/s, a 10M-user timer step 71–179 → 60–64 ms; engine-only apply unchanged within
// the noise (the copy still takes CPU, now on the other core).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** Pages (4 KiB) after which the writer checkpoints by itself after all: the worker is not keeping up. */
const BACKSTOP_PAGES = 16_384;
/** SQLite's own default, restored when the worker is gone. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;
/** The log file is cut back to this size when it restarts, so one burst does not leave a huge file behind. */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

// Plain CommonJS evaluated in the worker, so no bundler has to know about it; the driver's path comes from the
// main thread. Replies: {kind: 'ran'} after a periodic checkpoint someone waits for ({want: true}), {kind: 'now', id}
// to a request, {kind: 'failed'} once when periodic checkpoints start failing. A period when the log file is as it
// was after a checkpoint that brought it all in does nothing: an idle server's two workers (the request thread's
// connection and the engine thread's each start one) checkpointed 5 times a second each, and told their thread so,
// for about 2% of a core.
const WORKER_SOURCE = `
const { statSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let connection = null;
let failing = false;
let wanted = false;
let caughtUp = null;
function checkpoint() {
  connection ??= new Database(workerData.file, { fileMustExist: true });
  const [result] = connection.pragma('wal_checkpoint(PASSIVE)');
  return { log: result.log, checkpointed: result.checkpointed };
}
function logStamp() {
  try {
    const stat = statSync(workerData.file + '-wal', { bigint: true });
    return stat.size + ':' + stat.mtimeNs;
  } catch {
    return 'none';
  }
}
// Every everyMs while the log changes; idle, the looks space out to 16 periods (a burst after them grows the log by at
// most what 3 s of writes add, far below the writer's backstop).
const MAX_IDLE_PERIODS = 16;
let idlePeriods = 1;
let timer = setTimeout(period, workerData.everyMs);
function period() {
  const stamp = logStamp(); // before the checkpoint: a write during it changes the stamp, so the next period looks
  const idle = stamp === caughtUp && !wanted;
  if (!idle) {
    try {
      const result = checkpoint();
      caughtUp = result.log === result.checkpointed ? stamp : null;
      if (wanted) parentPort.postMessage({ kind: 'ran', ...result });
      wanted = false;
      failing = false;
    } catch (error) {
      caughtUp = null;
      if (!failing) parentPort.postMessage({ kind: 'failed', error: String((error && error.message) || error) });
      failing = true;
    }
  }
  idlePeriods = idle ? Math.min(idlePeriods * 2, MAX_IDLE_PERIODS) : 1;
  timer = setTimeout(period, workerData.everyMs * idlePeriods);
}
parentPort.on('message', (message) => {
  if (message.stop) {
    clearTimeout(timer);
    connection?.close();
    return parentPort.close();
  }
  if (message.want) {
    wanted = true;
    clearTimeout(timer);
    timer = setTimeout(period, workerData.everyMs);
    return;
  }
  try {
    parentPort.postMessage({ kind: 'now', id: message.now, ...checkpoint() });
  } catch (error) {
    parentPort.postMessage({ kind: 'now', id: message.now, error: String((error && error.message) || error) });
  }
});
`;

export interface CheckpointResult {
  /** Frames in the log, and how many of them are in the database file now. */
  log: number;
  checkpointed: number;
}

export interface Checkpointer {
  /** Checkpoints at once (tests; the worker also runs on its own). Rejects once the worker is gone. */
  now(): Promise<CheckpointResult>;
  /** The outcome of the worker's next periodic checkpoint. Rejects once the worker is gone. */
  nextRun(): Promise<CheckpointResult>;
  stop(): Promise<void>;
}

type WorkerReply = { kind: 'ran' | 'now' | 'failed'; id?: number; error?: string } & Partial<CheckpointResult>;
type Waiter = { resolve: (result: CheckpointResult) => void; reject: (error: Error) => void };

export interface CheckpointerOptions {
  everyMs?: number;
  /** The better-sqlite3 entry file (default: the project's); tests pass a broken one. */
  driver?: string;
}

/** Starts the worker for the database file `connection` writes, then lets the connection leave checkpoints to it. */
export function startCheckpointer(connection: BetterSqlite3.Database, file: string, options: CheckpointerOptions = {}): Checkpointer {
  const driver = options.driver ?? createRequire(join(/*turbopackIgnore: true*/ process.cwd(), 'package.json')).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, everyMs: options.everyMs ?? 200 } });
  worker.unref(); // never what keeps a process alive
  connection.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  connection.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);

  const requests = new Map<number, Waiter>();
  let runs: Waiter[] = [];
  let nextId = 0;
  let gone: Error | null = null;
  let stopping = false;
  worker.on('message', (reply: WorkerReply) => {
    const result = { log: reply.log!, checkpointed: reply.checkpointed! };
    if (reply.kind === 'now') {
      const waiter = requests.get(reply.id!);
      requests.delete(reply.id!);
      if (reply.error === undefined) waiter?.resolve(result);
      else waiter?.reject(new Error(reply.error));
    } else if (reply.kind === 'ran') {
      for (const waiter of runs) waiter.resolve(result);
      runs = [];
    } else console.warn(`[crowdflow] background SQLite checkpoint failed (the writer's backstop checkpoints meanwhile): ${reply.error}`);
  });
  worker.on('error', (error) => console.warn('[crowdflow] SQLite checkpoint worker failed:', error.message));
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      gone = new Error(stopping ? 'The checkpoint worker was stopped' : 'The checkpoint worker exited');
      if (!stopping && connection.open) connection.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
      for (const waiter of [...requests.values(), ...runs]) waiter.reject(gone);
      requests.clear();
      runs = [];
      resolve();
    }),
  );
  const waiting = (register: (waiter: Waiter) => void) =>
    new Promise<CheckpointResult>((resolve, reject) => (gone ? reject(gone) : register({ resolve, reject })));
  return {
    now: () =>
      waiting((waiter) => {
        const id = nextId++;
        requests.set(id, waiter);
        worker.postMessage({ now: id });
      }),
    nextRun: () =>
      waiting((waiter) => {
        runs.push(waiter);
        worker.postMessage({ want: true });
      }),
    stop: async () => {
      if (!gone) {
        stopping = true;
        worker.ref(); // waiting for its exit must keep this process alive until then
        worker.postMessage({ stop: true });
      }
      await exited;
    },
  };
}
