// The workflow's goal (`goal: {condition}`): a user of the instance for whom the condition holds on one of their
// events is converted, once per instance, from the step they were in when the event arrived. Per batch the users to
// watch are found with bitmaps (the batch's users in each step ANDNOT those already converted); the condition runs
// per event only for them, before the event moves anyone, so "purchase" converts from the step it moves them out of.
// Conversions are kept per shard as one bitmap per step (checkpointed) and written as Conversion rows in the batch's
// commit, so recovery gets them back (server/storage/journal/conversions.ts).
import type { ConditionEvent } from '../conditions/compile';
import { profileKeysOfAll } from '../conditions/profile-predicate';
import { compactBytes, RoaringBitmap32 } from '../crowd/bitmap';
import type { DeadLetterBatch } from './dead-letter';
import type { Shard } from './shard';
import type { ConversionWrite } from '../storage/journal/conversions';
import type { LogRow } from './log';
import type { WorkflowRuntime } from './runtime';
import type { Attributes, TenantData } from './context';

export class GoalTracker {
  /** Users not converted yet, by the step they are in now. */
  private readonly located = new Map<number, string>();
  private readonly reached = new Map<string, number[]>();

  private constructor(
    private readonly workflow: WorkflowRuntime,
    private readonly shard: Shard,
    private readonly data: TenantData,
    private readonly letters: DeadLetterBatch,
    private readonly now: number,
    private readonly profiles: Map<number, Attributes> | null,
  ) {}

  /** A tracker for the batch's users in the instance, or null when the workflow has no goal or none of them can convert. */
  static async watch(
    workflow: WorkflowRuntime,
    shard: Shard,
    batch: RoaringBitmap32,
    data: TenantData,
    letters: DeadLetterBatch,
    now: number,
  ): Promise<GoalTracker | null> {
    const goal = workflow.goal;
    if (!goal) return null;
    const open = shard.converted.size > 0 ? RoaringBitmap32.andNot(batch, shard.convertedUsers()) : batch;
    const byStep: [string, RoaringBitmap32][] = [];
    for (const [step, users] of shard.steps) {
      const here = RoaringBitmap32.and(open, users);
      if (here.size > 0) byStep.push([step, here]);
    }
    if (byStep.length === 0) return null;
    const watched = RoaringBitmap32.orMany(byStep.map(([, users]) => users));
    const profiles = goal.usesProfile ? await data.profilesOf(watched, profileKeysOfAll([goal.text])) : null;
    const tracker = new GoalTracker(workflow, shard, data, letters, now, profiles);
    for (const [step, users] of byStep) for (const user of users.toUint32Array()) tracker.located.set(user, step);
    return tracker;
  }

  /** Runs the goal for the event at `index` of the batch; a user it holds for is converted from where they are. */
  check(event: LogRow['events'][number], index: number): void {
    const step = this.located.get(event.user);
    if (step === undefined) return;
    const input = { user: event.user, now: this.now, event: event as ConditionEvent, profile: this.profiles?.get(event.user) };
    if (!this.letters.holds(this.workflow.goal!, input, this.data.membership, { instanceId: this.shard.instanceId, step, index, field: 'goal.condition' }))
      return;
    this.located.delete(event.user);
    let users = this.reached.get(step);
    if (!users) this.reached.set(step, (users = []));
    users.push(event.user);
  }

  /** The user moved on (an event moved them): a later event converts them from where they rest now. */
  moved(user: number, rest: string): void {
    if (this.located.has(user)) this.located.set(user, rest);
  }

  /** The user left the journey (its exit criteria): a later event of the batch does not convert them. */
  left(user: number): void {
    this.located.delete(user);
  }

  /** Adds the batch's conversions to the shard; returns them as rows for the batch's commit. */
  commit(): ConversionWrite[] {
    const rows: ConversionWrite[] = [];
    for (const [step, users] of this.reached) {
      const bitmap = RoaringBitmap32.from(Uint32Array.from(users).sort());
      this.shard.convert(step, bitmap);
      rows.push({ instanceId: this.shard.instanceId, partition: this.shard.partition, step, bitmap: compactBytes(bitmap) });
    }
    return rows;
  }
}
