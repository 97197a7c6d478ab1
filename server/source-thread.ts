// Worker threads that run our TypeScript: the export formatter threads always, the engine thread when the server runs
// from sources. Bundlers copy a `new Worker(new URL(...))` entry as a plain asset instead of bundling it, and the
// server's own bundles cannot be loaded outside Next, so the worker evaluates this plain CommonJS, which registers
// tsx's loader (when given) and imports the entry; the paths come from the process's directory. A failed start is
// posted as `{ kind: 'failed', error }` for the owner to report.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
(workerData.loader ? import(workerData.loader).then(({ register }) => register()) : Promise.resolve())
  .then(() => import(workerData.entry))
  .catch((error) => parentPort.postMessage({ kind: 'failed', error: { type: 'error', name: error.name, message: error.message, stack: error.stack } }));
`;

/** What a worker posts when its entry could not be loaded. */
export type ThreadStartFailed = { kind: 'failed'; error: { type: 'error'; name: string; message: string; stack?: string } };

/** The thread's entry: a compiled module's URL (no loader), or a source file under the project's root. */
export type ThreadEntry = { compiled: string } | { source: string };

/**
 * Starts `entry` in a worker thread; `handed` goes with the entry in the thread's `workerData` (its root reads it).
 * `youngGenerationMb`: the thread's young generation, when its default (V8's: 16 MiB semi-spaces) is too small.
 */
export function startThread(entry: ThreadEntry, handed: Record<string, unknown> = {}, youngGenerationMb?: number): Worker {
  const root = /*turbopackIgnore: true*/ process.cwd();
  const loading =
    'compiled' in entry
      ? { entry: entry.compiled }
      : { loader: pathToFileURL(join(root, 'node_modules/tsx/dist/esm/api/index.mjs')).href, entry: pathToFileURL(join(root, entry.source)).href };
  const resourceLimits = youngGenerationMb === undefined ? undefined : { maxYoungGenerationSizeMb: youngGenerationMb };
  return new Worker(BOOTSTRAP, { eval: true, workerData: { ...handed, ...loading }, resourceLimits });
}

/**
 * A worker thread one owner starts on first use and keeps (unref'd, so it never holds the process open). Its messages
 * go to `handlers.message`; when it fails to start, errors or exits, `handlers.fail` gets the error (the owner fails
 * what it was waiting for) and the next use starts a new thread. `close()` ends it (an app's close).
 */
export class OwnedThread<Message extends { kind: string }> {
  private worker: Worker | undefined;

  constructor(
    private readonly source: string,
    /** How errors name it, e.g. "the export table thread". */
    private readonly name: string,
    private readonly handlers: { message: (message: Message) => void; fail: (error: Error) => void },
  ) {}

  /** The running thread, started if there is none. */
  running(): Worker {
    this.worker ??= this.spawn();
    return this.worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.fail(worker, new Error(`${this.name} was closed`));
    await worker.terminate();
  }

  private spawn(): Worker {
    const worker = startThread({ source: this.source });
    worker.unref();
    worker.on('message', (message: Message | ThreadStartFailed) => {
      if (message.kind === 'failed') this.fail(worker, new Error(`${this.name} did not start: ${(message as ThreadStartFailed).error.message}`));
      else this.handlers.message(message as Message);
    });
    worker.on('error', (error) => this.fail(worker, error));
    worker.once('exit', (code) => this.fail(worker, new Error(`${this.name} exited (code ${code})`)));
    return worker;
  }

  private fail(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    void worker.terminate();
    this.handlers.fail(error);
  }
}
