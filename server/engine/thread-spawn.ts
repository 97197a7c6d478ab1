// Spawning the engine thread (server/engine/thread.ts). Loading its sources is most of what a boot costs, so the
// server entry spawns it first thing (`spawnEngineThreadEarly`), and the thread loads them while the request thread
// loads its own and Next's; the engine inside starts only when its client says `start` (after the migrations). This
// module imports little (env, and the runtime's types), so the entry loads it before anything else.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { env } from '../env';
import type { FromEngine } from './thread-protocol';

// From sources, the thread loads the engine through tsx's loader: Turbopack (Next 16.4) copies a
// `new Worker(new URL('./thread.ts', import.meta.url))` entry as a plain asset instead of bundling it, and the
// server's own bundles cannot be loaded outside Next. Plain CommonJS evaluated in the worker, so no bundler has
// to know about it; the paths come from the request thread. The compiled server (scripts/build-server.mjs) defines
// CROWDFLOW_ENGINE_THREAD_ENTRY as its compiled engine thread beside it, which loads with no loader at all.
const THREAD_BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
(workerData.loader ? import(workerData.loader).then(({ register }) => register()) : Promise.resolve())
  .then(() => import(workerData.entry))
  .catch((error) => parentPort.postMessage({ kind: 'failed', error: { type: 'error', name: error.name, message: error.message, stack: error.stack } }));
`;

declare const CROWDFLOW_ENGINE_THREAD_ENTRY: string | undefined;

function threadEntry(): { loader?: string; entry: string } {
  if (typeof CROWDFLOW_ENGINE_THREAD_ENTRY === 'string') return { entry: new URL(CROWDFLOW_ENGINE_THREAD_ENTRY, import.meta.url).href };
  const root = /*turbopackIgnore: true*/ process.cwd();
  return {
    loader: pathToFileURL(join(root, 'node_modules/tsx/dist/esm/api/index.mjs')).href,
    entry: pathToFileURL(join(root, 'server/engine/thread.ts')).href,
  };
}

export interface EngineThreadListener {
  message(message: FromEngine): void;
  error(error: Error): void;
  exit(code: number): void;
}

type ThreadEvent = { kind: 'message'; message: FromEngine } | { kind: 'error'; error: Error } | { kind: 'exit'; code: number };

/** A running engine thread; what it reports before its client listens (a failed bootstrap, an exit) is kept for it. */
export class EngineThread {
  readonly worker = new Worker(THREAD_BOOTSTRAP, { eval: true, workerData: threadEntry() });
  private readonly early: ThreadEvent[] = [];
  private listener: EngineThreadListener | undefined;

  constructor() {
    this.worker.on('message', (message: FromEngine) => this.deliver({ kind: 'message', message }));
    this.worker.on('error', (error) => this.deliver({ kind: 'error', error }));
    this.worker.once('exit', (code) => this.deliver({ kind: 'exit', code }));
  }

  listen(listener: EngineThreadListener): void {
    this.listener = listener;
    for (const event of this.early.splice(0)) this.deliver(event);
  }

  private deliver(event: ThreadEvent): void {
    const listener = this.listener;
    if (!listener) return void this.early.push(event);
    if (event.kind === 'message') listener.message(event.message);
    else if (event.kind === 'error') listener.error(event.error);
    else listener.exit(event.code);
  }
}

/** The server entry's first step: the engine thread starts loading its sources (unless the engine runs elsewhere); boot
 * hands it to the app it builds (server/create-app.ts), whose engine client takes it at start. */
export function spawnEngineThreadEarly(): EngineThread | undefined {
  if (env().CROWDFLOW_ENGINE === 'off' || env().CROWDFLOW_ENGINE_THREAD !== 'on') return undefined;
  return new EngineThread();
}
