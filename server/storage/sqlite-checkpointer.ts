// SQLite copies its write-ahead log into the database file ("checkpoints") inside whichever commit pushes the log
// past 1,000 pages: on our one connection, that is the event loop stalling for the copy and its fsync several times a
// second under load. A worker thread with its own connection checkpoints instead, without blocking the writer
// (PASSIVE), and the connection's own automatic checkpoint is raised to a backstop for a stalled worker.
// Measured (`npm run bench -- --only=engine,http --providers=sqlite`, two runs each): events end to end over HTTP
// 161,000–168,000 → 176,000–185,000/s, a 10M-user timer step 71–179 → 60–64 ms; engine-only apply unchanged within
// the noise (the copy still takes CPU, now on the other core).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

const CHECKPOINT_EVERY_MS = 200;
/** Pages (4 KiB) after which the writer checkpoints by itself after all: the worker is not keeping up. */
const BACKSTOP_PAGES = 16_384;
/** The log file is cut back to this size when it restarts, so one burst does not leave a huge file behind. */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

// Plain CommonJS evaluated in the worker, so no bundler has to know about it; the driver's path comes from the
// main thread.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let connection = null;
let warned = false;
function checkpoint(id) {
  try {
    connection ??= new Database(workerData.file, { fileMustExist: true });
    const [result] = connection.pragma('wal_checkpoint(PASSIVE)');
    if (id !== undefined) parentPort.postMessage({ id, log: result.log, checkpointed: result.checkpointed });
  } catch (error) {
    const message = String((error && error.message) || error);
    if (id !== undefined || !warned) parentPort.postMessage({ id, error: message });
    warned = true;
  }
}
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', (message) => {
  if (message.now !== undefined) return checkpoint(message.now);
  clearInterval(timer);
  connection?.close();
  parentPort.close();
});
`;

export interface CheckpointResult {
  /** Frames in the log, and how many of them are in the database file now. */
  log: number;
  checkpointed: number;
}

export interface Checkpointer {
  /** Checkpoints at once and resolves with the outcome (tests; the worker also runs on its own). */
  now(): Promise<CheckpointResult>;
  stop(): Promise<void>;
}

/** Tunes the writer connection and starts the worker for the database file it writes. */
export function startCheckpointer(connection: BetterSqlite3.Database, file: string): Checkpointer {
  connection.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  connection.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  const driver = createRequire(join(process.cwd(), 'package.json')).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, everyMs: CHECKPOINT_EVERY_MS } });
  worker.unref(); // never what keeps a process alive
  const waiting = new Map<number, (result: CheckpointResult | Error) => void>();
  let nextId = 0;
  worker.on('message', (message: { id?: number; error?: string } & Partial<CheckpointResult>) => {
    const reply = message.id === undefined ? undefined : waiting.get(message.id);
    if (message.id !== undefined) waiting.delete(message.id);
    if (reply) reply(message.error === undefined ? { log: message.log!, checkpointed: message.checkpointed! } : new Error(message.error));
    // Said once by the worker: the writer's backstop checkpoints meanwhile.
    else if (message.error !== undefined) console.warn(`[crowdflow] background SQLite checkpoint failed: ${message.error}`);
  });
  worker.on('error', (error) => console.warn('[crowdflow] SQLite checkpoint worker stopped:', error.message));
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    now: () =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, (result) => (result instanceof Error ? reject(result) : resolve(result)));
        worker.postMessage({ now: id });
      }),
    stop: async () => {
      worker.ref(); // waiting for its exit must keep this process alive until then
      worker.postMessage({ stop: true });
      await exited;
    },
  };
}
