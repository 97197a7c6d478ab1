// Time is injected everywhere timers matter, so tests skip time instead of sleeping for it.
export interface Clock {
  now(): number;
  /** Resolves after `ms` of this clock's time (or at once when aborted). */
  sleep(ms: number, signal?: AbortSignal, options?: SleepOptions): Promise<void>;
}

export type SleepOptions = {
  /**
   * When the clock jumps (a test's ManualClock.advance), wake once at the end of the jump rather than at the instant
   * the sleep ended: for a loop that looks at the present (a counts sample a minute), not at every instant on the way.
   */
  coarse?: boolean;
  /** The wait keeps no process alive (a debounce that close() ends anyway). */
  unref?: boolean;
};

const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal, options) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      // Node fires a delay past 2^31-1 ms at once: an endless sleep waits for its signal only, a long one wakes early.
      const timer = Number.isFinite(ms) ? setTimeout(done, Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS)) : undefined;
      if (options?.unref) timer?.unref();
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    }),
};

/**
 * Calls `task` once `ms` of the clock's time have passed, unless the returned cancel is called first. The wait keeps
 * no process alive.
 */
export function callAfter(clock: Clock, ms: number, task: () => void): () => void {
  const cancelled = new AbortController();
  void clock.sleep(ms, cancelled.signal, { unref: true }).then(() => {
    if (!cancelled.signal.aborted) task();
  });
  return () => cancelled.abort();
}

type Sleeper = { at: number; coarse: boolean; resolve: () => void };

/** A clock that only moves when a test calls advance()/set(); sleepers wake in time order. */
export class ManualClock implements Clock {
  private sleepers: Sleeper[] = [];

  constructor(private current = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal, options: SleepOptions = {}): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const abort = () => this.wake(sleeper);
      const sleeper: Sleeper = {
        at: this.current + Math.max(0, ms),
        coarse: options.coarse === true,
        resolve: () => (signal?.removeEventListener('abort', abort), resolve()),
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', abort, { once: true });
    });
  }

  /** Moves time forward, waking every sleeper whose time has come and letting its continuation run. */
  async advance(ms: number): Promise<void> {
    await this.set(this.current + ms);
  }

  /**
   * Moves time to `time`, an instant at a time: the sleepers due at the same instant wake together (as Node runs every
   * expired timer before the next setImmediate), then their continuations run. Coarse sleepers due on the way wake
   * once, at `time`.
   */
  async set(time: number): Promise<void> {
    for (;;) {
      let at = Number.POSITIVE_INFINITY;
      for (const sleeper of this.sleepers) if (!sleeper.coarse && sleeper.at <= time) at = Math.min(at, sleeper.at);
      if (at === Number.POSITIVE_INFINITY) break;
      this.current = Math.max(this.current, at);
      for (const due of this.sleepers.filter((s) => !s.coarse && s.at === at)) this.wake(due);
      await flushMicrotasks();
    }
    this.current = Math.max(this.current, time);
    for (const due of this.sleepers.filter((s) => s.coarse && s.at <= this.current)) this.wake(due);
    await flushMicrotasks();
  }

  pendingSleepers(): number {
    return this.sleepers.length;
  }

  private wake(sleeper: Sleeper): void {
    this.sleepers = this.sleepers.filter((s) => s !== sleeper);
    sleeper.resolve();
  }
}

/** Waits for a turn of work elsewhere: the engine's FairTurns hands in the tenant's next turn, or a bare one of the loop. */
export type NextTurn = () => Promise<void>;

/**
 * One turn of this thread's event loop, between two pieces of long work. Awaiting a synchronous driver's query (SQLite)
 * gives none: its promise is already resolved.
 */
export const nextTurnOfTheLoop: NextTurn = () => new Promise((resolve) => setImmediate(resolve));

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await nextTurnOfTheLoop();
}

const WOKEN = 'woken';

/**
 * Wakes a loop that sleeps on `signal()`. The loop takes the signal before it looks for work, so a wake() after it
 * looked still ends the sleep; waking an already woken round costs nothing (no new controller, no DOMException),
 * which matters when every commit and every ingested batch wakes someone.
 */
export class Wakeup {
  private controller = new AbortController();

  signal(): AbortSignal {
    if (this.controller.signal.aborted) this.controller = new AbortController();
    return this.controller.signal;
  }

  wake(): void {
    if (!this.controller.signal.aborted) this.controller.abort(WOKEN);
  }
}

/**
 * Sleeps on `clock` until `ms` passed or any of the signals aborts: a one-off controller per sleep whose listeners are
 * removed after it, so repeated sleeps never pile listeners onto long-lived signals.
 */
export async function sleepUntilAborted(clock: Clock, ms: number, ...signals: AbortSignal[]): Promise<void> {
  if (signals.some((signal) => signal.aborted)) return;
  const once = new AbortController();
  // A plain reason: an abort without one builds a DOMException with its stack, and 8,000 partitions wake at a firing.
  const abort = () => once.abort(WOKEN);
  for (const signal of signals) signal.addEventListener('abort', abort, { once: true });
  try {
    await clock.sleep(ms, once.signal);
  } finally {
    for (const signal of signals) signal.removeEventListener('abort', abort);
  }
}

/**
 * Whether a loop is at work or asleep on its clock, so a test that moved a ManualClock can await the loop having done
 * all it can (`settled()`) instead of sleeping for real. The loop says when it starts (`started()`), sleeps through
 * `sleep` and says when it ends (`stopped()`); it counts as awake from the moment a signal wakes it or its time comes
 * until it sleeps again. A loop not running counts as settled.
 */
export class LoopIdle {
  /** When the loop's sleep ends; undefined while it works. */
  private asleepUntil: number | undefined = Number.POSITIVE_INFINITY;
  private waiters: (() => void)[] = [];

  constructor(private readonly clock: Clock) {}

  started(): void {
    this.asleepUntil = undefined;
  }

  /** Sleeps until `ms` passed or `signal` aborts, asleep for settled() meanwhile. */
  async sleep(ms: number, signal: AbortSignal, options?: SleepOptions): Promise<void> {
    if (signal.aborted) return;
    const awake = () => (this.asleepUntil = undefined);
    signal.addEventListener('abort', awake, { once: true });
    this.asleepUntil = this.clock.now() + Math.max(0, ms);
    for (const waiter of this.waiters.splice(0)) waiter();
    try {
      await this.clock.sleep(ms, signal, options);
    } finally {
      awake();
      signal.removeEventListener('abort', awake);
    }
  }

  stopped(): void {
    this.asleepUntil = Number.POSITIVE_INFINITY;
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Whether the loop sleeps now with its time still to come (or does not run). */
  isAsleep(): boolean {
    return this.asleepUntil !== undefined && this.asleepUntil > this.clock.now();
  }

  /** Resolves once the loop sleeps with its time still to come: at once if it does, else when it next sleeps. */
  async settled(): Promise<void> {
    while (!this.isAsleep()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}
