// What happens to users as they enter a step, decided by bitmaps. Audience paths: a branch step none of whose
// conditions reads `event` routes the users entering it at once (docs/journeys.md "Semantics"). Whoever enters, a
// whole start crowd or one user, is routed by bitmaps: each branch's plan runs over the users no earlier branch took
// (first match wins), the profile index answering profile leaves, so a start of 10M users into a 3-way profile branch
// is a few ANDs per partition, never a per-user loop. Exit criteria that read no `event` (exit.ts) are checked the
// same way for the users of a bulk move. A condition without a plan (a regex on a profile, `now` arithmetic) is
// evaluated per user (exit.ts's criteria too): ahead of a bulk move, between slice boundaries (`prepare`), since the
// Mover that routes is synchronous and a start of 10M users through a per-user condition would hold the engine thread
// for seconds; the route then reads those results, and evaluates in one go only users no prepare covered (an event's
// single user).
import type { CompiledCondition } from '../conditions/compile';
import { ConditionCostExceeded } from '../../core/conditions/cost';
import { evaluateIndexedPlan, type IndexPlanResolver } from '../profiles/index-plan';
import { profileKeysRead } from '../conditions/profile-predicate';
import { RoaringBitmap32 } from '../crowd/bitmap';
import type { TenantData } from './context';
import type { Slices } from './slices';
import type { StepRuntime, WorkflowRuntime } from './runtime';

/** Users per profile read when a condition has no bitmap plan and runs per user (never all of them as objects). */
const PROFILE_READ_USERS = 2_048;

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
  /**
   * Evaluates the conditions without a bitmap plan that a bulk move of `users` into step `into` at `now` may apply
   * (the exit criteria, and those of the routing steps reachable from `into` by moves made at once; `into` null: the
   * exit criteria alone), yielding at slice boundaries: route and exiting then evaluate none of those users in one block.
   */
  prepare(users: RoaringBitmap32, into: string | null, now: number, slices: Slices): Promise<void>;
}

/** For versions with no step that routes on entry and no exit criteria over bitmaps: the Mover never routes. */
const NO_ROUTING: EntryRouting = {
  route() {
    throw new Error('this workflow version has no branch step that routes on entry');
  },
  exiting: () => new RoaringBitmap32(),
  prepare: async () => undefined,
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
  return new IndexRouting(resolver, data, workflow, exit);
}

/** A per-user condition's results at one moment: who was evaluated, and who of them met it. */
interface Prepared {
  now: number;
  evaluated: RoaringBitmap32;
  matched: RoaringBitmap32;
}

class IndexRouting implements EntryRouting {
  private readonly prepared = new Map<CompiledCondition, Prepared>();
  /** By step entered: the conditions without a bitmap plan a move into it may apply (perUserReached). */
  private readonly reached = new Map<string | null, CompiledCondition[]>();

  constructor(
    private readonly resolver: IndexPlanResolver,
    private readonly data: TenantData,
    private readonly workflow: WorkflowRuntime,
    private readonly exit: CompiledCondition | null,
  ) {}

  async prepare(users: RoaringBitmap32, into: string | null, now: number, slices: Slices): Promise<void> {
    for (const condition of this.perUserReached(into)) {
      const known = this.prepared.get(condition);
      const current = known?.now === now ? known : undefined;
      const fresh = current ? RoaringBitmap32.andNot(users, current.evaluated) : users.clone();
      if (fresh.isEmpty) continue;
      const matched = await perUserMatches(this.data, condition, fresh, now, slices);
      if (current) {
        current.evaluated.orInPlace(fresh);
        current.matched.orInPlace(matched);
      } else this.prepared.set(condition, { now, evaluated: fresh, matched });
    }
  }

  /**
   * The exit criteria and the routing conditions of the steps users entering `into` reach at once (a direct,
   * parallel or split step's next, a routing branch's), those without a bitmap plan: users who reach no routing step
   * in this move need none of its conditions evaluated.
   */
  private perUserReached(into: string | null): CompiledCondition[] {
    const known = this.reached.get(into);
    if (known) return known;
    const conditions = new Set<CompiledCondition>(this.exit ? [this.exit] : []);
    const seen = new Set<string>();
    for (const queue = into === null ? [] : [into]; queue.length > 0; ) {
      const name = queue.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const runtime = this.workflow.get(name);
      const step = runtime.step;
      if ((step.kind === 'direct' || step.kind === 'parallel') && step.next) queue.push(step.next);
      else if (step.kind === 'split') queue.push(...step.paths.map((path) => path.next));
      else if (step.kind === 'branch' && runtime.routesOnEntry) {
        for (const condition of runtime.conditions) conditions.add(condition);
        queue.push(...step.branches.map((branch) => branch.next));
      }
    }
    const perUser = [...conditions].filter((condition) => !condition.plan);
    this.reached.set(into, perUser);
    return perUser;
  }

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
    const prepared = this.prepared.get(condition);
    if (prepared?.now !== now) return this.evaluatedNow(condition, users, now);
    const matched = RoaringBitmap32.and(users, prepared.matched);
    const unprepared = RoaringBitmap32.andNot(users, prepared.evaluated);
    if (!unprepared.isEmpty) matched.orInPlace(this.evaluatedNow(condition, unprepared, now));
    unprepared.dispose();
    return matched;
  }

  /** Who of `users` meets a per-user condition, evaluated in one go (users no prepare() covered). */
  private evaluatedNow(condition: CompiledCondition, users: RoaringBitmap32, now: number): RoaringBitmap32 {
    const ids = users.toUint32Array();
    const keys = condition.usesProfile ? profileKeysRead(condition.text) : null;
    const out: number[] = [];
    for (let from = 0; from < ids.length; from += PROFILE_READ_USERS) {
      const chunk = ids.subarray(from, from + PROFILE_READ_USERS);
      const chunkUsers = condition.usesProfile ? RoaringBitmap32.from(chunk) : null;
      const profiles = chunkUsers ? this.resolver.profiles.materialize(chunkUsers, keys ?? undefined) : null;
      chunkUsers?.dispose(); // materialize reads it and returns plain objects
      for (const user of chunk) if (holds(condition, { user, now, profile: profiles?.get(user) }, this.data)) out.push(user);
    }
    return RoaringBitmap32.from(out);
  }
}

/**
 * Who of `users` meets `condition` (one without a bitmap plan) at `now`, evaluated per user: the profiles read back
 * from the index a few thousand at a time, and the other tenants' work given a turn whenever a slice has run its
 * time, checked after every user (one evaluation may take up to the cost budget's ~55 ms, so a count of users is no
 * bound on time). The condition's crowds must be prepared (TenantData.prepareCrowds).
 */
export async function perUserMatches(
  data: TenantData,
  condition: CompiledCondition,
  users: RoaringBitmap32,
  now: number,
  slices: Slices,
): Promise<RoaringBitmap32> {
  const ids = users.toUint32Array();
  const keys = condition.usesProfile ? profileKeysRead(condition.text) : null;
  const out: number[] = [];
  for (let from = 0; from < ids.length; from += PROFILE_READ_USERS) {
    const chunk = ids.subarray(from, from + PROFILE_READ_USERS);
    const profiles = condition.usesProfile ? await data.profilesOf(chunk, keys) : null;
    for (const user of chunk) {
      if (holds(condition, { user, now, profile: profiles?.get(user) }, data)) out.push(user);
      if (slices.due) await slices.yield();
    }
  }
  return RoaringBitmap32.from(out);
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
