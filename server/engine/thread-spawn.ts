// Spawning the engine thread (server/engine/thread.ts). Loading its sources is most of what a boot costs, so the
// server entry spawns it first thing (`spawnEngineThreadEarly`), and the thread loads them while the request thread
// loads its own and Next's; the engine inside starts only when its client says `start` (after the migrations). This
// module imports little (the runtime's types), so the entry loads it before anything else.
import type { Worker } from 'node:worker_threads';
import type { Env } from '../env';
import { startThread, type ThreadEntry } from '../source-thread';
import type { FromEngine } from './thread-protocol';

// The compiled server (scripts/build-server.mjs) defines CROWDFLOW_ENGINE_THREAD_ENTRY as its compiled engine thread
// beside it, which loads with no loader at all; from sources the thread loads through tsx (server/source-thread.ts).
declare const CROWDFLOW_ENGINE_THREAD_ENTRY: string | undefined;

function threadEntry(): ThreadEntry {
  if (typeof CROWDFLOW_ENGINE_THREAD_ENTRY === 'string') return { compiled: new URL(CROWDFLOW_ENGINE_THREAD_ENTRY, import.meta.url).href };
  return { source: 'server/engine/thread.ts' };
}

/**
 * The engine thread's young generation: three semi-spaces' worth, 32 MiB each (V8's default is 16), as the request
 * thread's `--max-semi-space-size=32` (docs/ARCHITECTURE.md "Garbage collection").
 */
const ENGINE_YOUNG_GENERATION_MB = 96;

export interface EngineThreadListener {
  message(message: FromEngine): void;
  error(error: Error): void;
  exit(code: number): void;
}

type ThreadEvent = { kind: 'message'; message: FromEngine } | { kind: 'error'; error: Error } | { kind: 'exit'; code: number };

/** What the engine thread's root (server/engine/thread.ts) is handed in its workerData. */
export interface EngineThreadData {
  /** The environment of the app that spawned it: the thread builds its own app by it, not by process.env. */
  env: Env;
}

/** A running engine thread; what it reports before its client listens (a failed bootstrap, an exit) is kept for it. */
export class EngineThread {
  readonly worker: Worker;
  private readonly early: ThreadEvent[] = [];
  private listener: EngineThreadListener | undefined;

  constructor(env: Env) {
    this.worker = startThread(threadEntry(), { env } satisfies EngineThreadData, ENGINE_YOUNG_GENERATION_MB);
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
export function spawnEngineThreadEarly(env: Env): EngineThread | undefined {
  if (env.CROWDFLOW_ENGINE === 'off' || env.CROWDFLOW_ENGINE_THREAD !== 'on') return undefined;
  return new EngineThread(env);
}
