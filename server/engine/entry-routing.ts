// What happens to users as they enter a step, decided by bitmaps. Audience paths: a branch step none of whose
// conditions reads `event` routes the users entering it at once (docs/journeys.md "Semantics"). Whoever enters, a
// whole start crowd or one user, is routed by bitmaps: each branch's plan runs over the users no earlier branch took
// (first match wins), the profile index answering profile leaves, so a start of 10M users into a 3-way profile branch
// is a few ANDs per partition, never a per-user loop. Exit criteria that read no `event` (exit.ts) are checked the
// same way for the users of a bulk move. A condition without a plan (a regex on a profile, `now` arithmetic) is
// evaluated per user, its profiles read back from the index a slice at a time.
import type { CompiledCondition } from '../conditions/compile';
import { ConditionCostExceeded } from '../../core/conditions/cost';
import { evaluateIndexedPlan, type IndexPlanResolver } from '../profiles/index-plan';
import { profileKeysRead } from '../conditions/profile-predicate';
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { TenantData } from './context';
import type { StepRuntime, WorkflowRuntime } from './runtime';

/** Users per slice when a condition has no bitmap plan and runs per user. */
const PER_USER_SLICE = 20_000;

export interface EntryRouting {
  /**
   * The users of `users` each branch of `runtime` (a branch step that routes on entry) takes, in branch order and
   * disjoint (first match wins), and those no branch takes. `users` is not changed; the bitmaps returned are new, and
   * the caller frees them (moves.ts: each group once it has moved).
   */
  route(runtime: StepRuntime, users: RoaringBitmap32, now: number): { taken: RoaringBitmap32[]; rest: RoaringBitmap32 };
  /**
   * The users of `users` who meet the workflow's exit criteria (none when they read `event` or there are none): a new
   * bitmap the caller frees.
   */
  exiting(users: RoaringBitmap32, now: number): RoaringBitmap32;
}

/** For versions with no step that routes on entry and no exit criteria over bitmaps: the Mover never routes. */
const NO_ROUTING: EntryRouting = {
  route() {
    throw new Error('this workflow version has no branch step that routes on entry');
  },
  exiting: () => new RoaringBitmap32(),
};

/**
 * The routing of `workflow`'s entry-routing branch steps over the tenant's crowds and profile index, loaded now so
 * that a Mover (synchronous) can route as users enter. Build one per batch, start or timer firing: the crowds it
 * reads are those cached at this moment.
 */
export async function entryRouting(data: TenantData, workflow: WorkflowRuntime): Promise<EntryRouting> {
  const exit = workflow.exit?.bulk ? workflow.exit.condition : null;
  const conditions = [...workflow.steps.values()].filter((step) => step.routesOnEntry).flatMap((step) => step.conditions);
  if (exit) conditions.push(exit);
  if (conditions.length === 0) return NO_ROUTING;
  const resolver = await data.resolver([...new Set(conditions.flatMap((condition) => condition.crowds))]);
  return new IndexRouting(resolver, data, exit);
}

class IndexRouting implements EntryRouting {
  constructor(
    private readonly resolver: IndexPlanResolver,
    private readonly data: TenantData,
    private readonly exit: CompiledCondition | null,
  ) {}

  exiting(users: RoaringBitmap32, now: number): RoaringBitmap32 {
    return this.exit && !users.isEmpty ? this.matching(this.exit, users, now) : new RoaringBitmap32();
  }

  route(runtime: StepRuntime, users: RoaringBitmap32, now: number) {
    const rest = users.clone();
    const taken = runtime.conditions.map((condition) => {
      if (rest.isEmpty) return new RoaringBitmap32();
      const matched = this.matching(condition, rest, now);
      rest.andNotInPlace(matched);
      return matched;
    });
    return { taken, rest };
  }

  private matching(condition: CompiledCondition, users: RoaringBitmap32, now: number): RoaringBitmap32 {
    if (condition.plan) return evaluateIndexedPlan(condition.plan, this.resolver, users);
    const ids = users.toUint32Array();
    const keys = condition.usesProfile ? profileKeysRead(condition.text) : null;
    const out: number[] = [];
    for (let from = 0; from < ids.length; from += PER_USER_SLICE) {
      const slice = ids.subarray(from, from + PER_USER_SLICE);
      const sliceUsers = condition.usesProfile ? RoaringBitmap32.from(slice) : null;
      const profiles = sliceUsers ? this.resolver.profiles.materialize(sliceUsers, keys ?? undefined) : null;
      sliceUsers?.dispose(); // materialize reads it and returns plain objects
      for (const user of slice) if (holds(condition, { user, now, profile: profiles?.get(user) }, this.data)) out.push(user);
    }
    return RoaringBitmap32.from(out);
  }
}

/**
 * A profile condition over a profile too large for the runtime cost budget is false for that user (who then waits
 * in the step like one no branch matched): on entry there is no event to set aside as a dead letter.
 */
function holds(condition: CompiledCondition, input: Parameters<CompiledCondition['predicate']>[0], data: TenantData): boolean {
  try {
    return condition.predicate(input, data.membership);
  } catch (error) {
    if (error instanceof ConditionCostExceeded) return false;
    throw error;
  }
}
