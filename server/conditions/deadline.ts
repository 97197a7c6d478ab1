// The deadline of ad hoc queries (audience estimates, explains): request-shaped work that runs on the engine thread
// beside events, timers and procedures. A per-evaluation budget bounds one evaluation (cost.ts), not a request's
// total: 10,000 users of a condition within the budget took 53 s. So the query's loop meters itself: it looks at the
// clock every few users, yields the thread every YIELD_AFTER_MS of work (other calls and tenants interleave), and
// stops with 422 query_deadline once QUERY_DEADLINE_MS have passed. docs/conditions.md says why this and not a
// worker that could be terminated.
import { AppError } from '../errors';
import { nextTurnOfTheLoop, type Clock } from '../clock';

/** How long an ad hoc query may evaluate before it is stopped (422 `query_deadline`). */
export const QUERY_DEADLINE_MS = 2_000;
/** Work between two turns given to the rest of the thread. */
export const YIELD_AFTER_MS = 10;
/** Estimated cost units between two looks at the clock: about 1 ms of work at the slowest 50 ns a unit (cost.ts). */
const UNITS_PER_CLOCK_LOOK = 20_000;
const MAX_USERS_PER_CLOCK_LOOK = 256;

export type DeadlineOptions = {
  /** The clock the deadline and the yields are measured with: the engine's (tests pass one they move). */
  clock: Pick<Clock, 'now'>;
  /** QUERY_DEADLINE_MS unless a test or a caller says otherwise. */
  deadlineMs?: number;
  /**
   * Waits for the querying tenant's next turn of the engine thread (its FairTurns, server/engine/slices.ts), so a
   * tenant's queries and its other long work share one place in the round; without one, a bare turn of the event loop.
   */
  turn?: () => Promise<void>;
};

export class QueryDeadline {
  private readonly started: number;
  private lastYield: number;
  readonly deadlineMs: number;

  constructor(
    private readonly what: string,
    private readonly options: DeadlineOptions,
  ) {
    this.deadlineMs = options.deadlineMs ?? QUERY_DEADLINE_MS;
    this.started = this.lastYield = options.clock.now();
  }

  /**
   * Between two pieces of work: at or past the deadline throws 422 `query_deadline` (`progress` says how far it got);
   * YIELD_AFTER_MS after the last turn, gives the thread's other work a turn first.
   */
  async checkpoint(progress: () => string): Promise<void> {
    const now = this.options.clock.now();
    if (now - this.started >= this.deadlineMs) {
      throw new AppError(
        'query_deadline',
        `${this.what} was stopped at its deadline of ${this.deadlineMs.toLocaleString('en-US')} ms (${progress()}); narrow it (a crowd, a cheaper condition) and ask again`,
        { deadlineMs: this.deadlineMs },
      );
    }
    if (now - this.lastYield >= YIELD_AFTER_MS) {
      await (this.options.turn ?? nextTurnOfTheLoop)();
      this.lastYield = this.options.clock.now();
    }
  }
}

/** Users to evaluate between two checkpoints for a condition estimated at `costPerUser` units: ~1 ms of work. */
export function usersPerCheckpoint(costPerUser: number): number {
  return Math.max(1, Math.min(MAX_USERS_PER_CLOCK_LOOK, Math.floor(UNITS_PER_CLOCK_LOOK / Math.max(1, costPerUser))));
}
