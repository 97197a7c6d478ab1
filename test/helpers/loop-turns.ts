// Turns of this thread's event loop, counted by a setImmediate that schedules itself again: it runs once a turn, so
// work that holds the thread (a synchronous driver's queries awaited in a row, one long fold) shows as no turns.

/** Counts turns from now until `stop()`; `stamps` holds when each ran (performance.now()). */
export function loopTurns() {
  const stamps: number[] = [];
  let running = true;
  const turn = () => {
    stamps.push(performance.now());
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  return {
    stamps,
    /** How many turns so far. */
    get count(): number {
      return stamps.length;
    },
    stop(): void {
      running = false;
    },
  };
}
