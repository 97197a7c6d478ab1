// Exit criteria (workflow `exit: {condition}`, docs/journeys.md "Exit criteria"): a user who meets them leaves the
// journey from whatever step they are in, without the actions of any later step, and is counted there as exited early
// (Shard.exited, one bitmap per step). An exit is journaled as a move to EXITED with no action tags, so recovery and
// point-in-time reads replay it like any move. Users resting in an end step (a direct or parallel step without
// `next`) have finished the journey: the criteria no longer apply to them.
//
// When they are checked:
// - on each event of a user in the journey, at once: after the goal (a purchase that is both converts AND exits) and
//   before the branches (an exited user takes no branch). The batch's users in the instance are found with one AND per
//   step; the condition runs per event only for them (ExitWatch);
// - criteria that read no `event` (profiles, crowds, `user`, `now`) also for whole bitmaps, as one bitmap plan where
//   the condition has one (entry-routing.ts `exiting`): for the users of every bulk move (a start, a crowd update, a
//   trigger's entrants, a delay, timeout or timer step moving users; moves.ts), and for everyone still on the way at each
//   timer firing of the instance (exitAtFiring), so a profile that changes takes its user out at the next firing.
import type { ConditionEvent } from '../conditions/compile';
import { profileKeysOfAll } from '../conditions/profile-predicate';
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { Attributes, TenantData } from './context';
import type { DeadLetterBatch } from './dead-letter';
import type { Mover } from './moves';
import type { LogRow } from './log';
import type { Slices } from './slices';

/** The `toStep` of a journaled exit: not a step name (step names cannot hold `$`). Notifications show it as `to`. */
export const EXITED = '$exit';

/** The exit criteria of one batch of events in one shard: who of the batch's users is in the journey, and where. */
export class ExitWatch {
  /** The batch's users in the journey, by the step they are in now. */
  private readonly located = new Map<number, string>();

  private constructor(
    private readonly mover: Mover,
    private readonly data: TenantData,
    private readonly letters: DeadLetterBatch,
    private readonly profiles: Map<number, Attributes> | null,
  ) {}

  /** A watch over the batch's users in the instance, or null when the workflow has no exit criteria or none of them is in it. */
  static async watch(mover: Mover, batch: RoaringBitmap32, data: TenantData, letters: DeadLetterBatch): Promise<ExitWatch | null> {
    const exit = mover.workflow.exit;
    if (!exit) return null;
    const byStep: [string, RoaringBitmap32][] = [];
    for (const [step, users] of mover.shard.steps) {
      if (mover.workflow.exitSteps.has(step)) continue;
      const here = RoaringBitmap32.and(batch, users);
      if (here.size > 0) byStep.push([step, here]);
    }
    if (byStep.length === 0) return null;
    const watched = RoaringBitmap32.orMany(byStep.map(([, users]) => users));
    const profiles = exit.condition.usesProfile ? await data.profilesOf(watched, profileKeysOfAll([exit.condition.text])) : null;
    const watch = new ExitWatch(mover, data, letters, profiles);
    for (const [step, users] of byStep) for (const user of users.toUint32Array()) watch.located.set(user, step);
    return watch;
  }

  /** Runs the exit criteria for the event at `index` of the batch; true when they took its user out of the journey. */
  check(event: LogRow['events'][number], index: number): boolean {
    const step = this.located.get(event.user);
    if (step === undefined) return false;
    const { mover } = this;
    const input = { user: event.user, now: mover.now, event: event as ConditionEvent, profile: this.profiles?.get(event.user) };
    const where = { instanceId: mover.shard.instanceId, step, index, field: 'exit.condition' };
    if (!this.letters.holds(mover.workflow.exit!.condition, input, this.data.membership, where)) return false;
    this.located.delete(event.user);
    mover.exitUser(event.user, step);
    return true;
  }

  /** The user moved on (an event moved them): a later event checks them where they rest now. */
  moved(user: number, rest: string): void {
    if (this.located.has(user)) this.located.set(user, rest);
  }
}

/**
 * A timer firing of the instance: everyone on the way (not in an end step) who meets exit criteria that read no event
 * leaves the journey from their step (one plan over those users, then one AND per step). True when anyone left.
 */
export async function exitAtFiring(mover: Mover, slices: Slices): Promise<boolean> {
  const { shard, workflow } = mover;
  if (!workflow.exit?.bulk) return false;
  const onTheWay = [...shard.steps].filter(([step, users]) => !workflow.exitSteps.has(step) && users.size > 0);
  const everyone = RoaringBitmap32.orMany(onTheWay.map(([, users]) => users));
  await mover.routing.prepare(everyone, null, mover.now, slices); // criteria without a bitmap plan: per user, in slices
  const leaving = mover.routing.exiting(everyone, mover.now);
  // Both are this firing's own (as are the ANDs below: exitBulk copies and serializes them), freed now rather than by
  // V8: at 10M users each is about a megabyte of native memory (see Arrivals in moves.ts).
  everyone.dispose();
  mover.exitsChecked = true;
  const anyone = !leaving.isEmpty;
  for (const [step, users] of anyone ? onTheWay : []) {
    const here = RoaringBitmap32.and(users, leaving);
    mover.exitBulk(here, step);
    here.dispose();
  }
  leaving.dispose();
  return anyone;
}
