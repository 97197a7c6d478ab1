// Whether the engine thread still answers, as the request thread sees it: any message from the thread counts, and the
// request thread asks (a ping) when it has heard nothing for a while. No slice of engine work holds its loop for
// anywhere near ENGINE_UNRESPONSIVE_MS (a 10M-user start or timer takes well under 2 s), so silence that long means
// the thread hangs; the cluster heartbeat stops then (server/cluster/member-lock.ts) and the partitions move.
export const ENGINE_UNRESPONSIVE_MS = 30_000;
/** How often the request thread asks a silent engine thread whether it is there. */
export const ENGINE_PING_EVERY_MS = 1_000;

export class EngineLiveness {
  private heardAt: number;
  private asking = false;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly unresponsiveAfterMs = ENGINE_UNRESPONSIVE_MS,
  ) {
    this.heardAt = now();
  }

  /** A message came from the engine thread. */
  heard(): void {
    this.heardAt = this.now();
    this.asking = false;
  }

  /** Whether to ask now: the thread has been silent for a ping period and no question is still unanswered. */
  shouldAsk(): boolean {
    if (this.asking || this.now() - this.heardAt < ENGINE_PING_EVERY_MS) return false;
    this.asking = true;
    return true;
  }

  responsive(): boolean {
    return this.now() - this.heardAt < this.unresponsiveAfterMs;
  }
}
