import roaring from 'roaring';
import { describe, expect, it } from 'vitest';
import { compileCondition, requireCondition, evaluatePlan } from '../../server/conditions/compile';
import { evaluateIndexedPlan, planResolver, ProfileIndex } from '../../server/profiles/index-plan';

const { RoaringBitmap32 } = roaring;

// Intermediates are freed as soon as they are combined (server/conditions/plan-eval.ts): left to the collector, V8
// ran a full mark-compact every few evaluations at 10M users. Roaring's native memory is what measures it.
const USERS = 400_000;
const CONDITIONS = [
  'profile.plan == "pro" && profile.age >= 30',
  'profile.age < 20 || profile.age > 60 || profile.plan in ["free", "team"]',
  '!(profile.age <= -5) && has(profile.plan) && profile.age != 41',
];

function denseIndex(): ProfileIndex {
  const index = new ProfileIndex();
  const batch: Array<{ user: number; after: Record<string, unknown> }> = [];
  for (let user = 0; user < USERS; user++) batch.push({ user, after: { plan: ['pro', 'free', 'team'][user % 3], age: (user % 97) - 10 } });
  index.apply(batch);
  return index;
}

/** Native bytes held by `bitmap`: what evaluating it is allowed to leave behind. */
const held = (bitmap: InstanceType<typeof RoaringBitmap32>) => bitmap.getSerializationSizeInBytes('croaring') + 4096;

describe('bitmap plans free what they do not return', () => {
  const index = denseIndex();
  const resolver = planResolver(() => undefined, index);

  for (const text of CONDITIONS) {
    it(`keeps only the result of ${text} in native memory`, () => {
      const plan = compileCondition(requireCondition(text)).plan!;
      const before = roaring.getRoaringUsedMemory();
      const matched = evaluatePlan(plan, resolver, index.users);
      expect(matched.size).toBeGreaterThan(0);
      expect(roaring.getRoaringUsedMemory() - before).toBeLessThan(held(matched));
      matched.dispose();
    });
  }

  it('frees a cached whole-index result once a write makes it stale', () => {
    const plan = compileCondition(requireCondition(CONDITIONS[0])).plan!;
    const users = RoaringBitmap32.fromRange(0, USERS);
    evaluateIndexedPlan(plan, resolver, users).dispose(); // caches the result over every user of the index
    const cached = index.planResults.get(plan)!.matched;
    const cachedBytes = held(cached);
    index.set(USERS + 1, { plan: 'pro', age: 50 });
    const before = roaring.getRoaringUsedMemory();
    const matched = evaluateIndexedPlan(plan, resolver, users);
    expect(cached.size).toBe(0); // the stale result was freed, not left to the collector
    expect(roaring.getRoaringUsedMemory() - before).toBeLessThan(cachedBytes + held(matched));
    expect(matched.has(USERS + 1)).toBe(false); // outside `users`
    expect(evaluateIndexedPlan(plan, resolver, RoaringBitmap32.from([USERS + 1])).toArray()).toEqual([USERS + 1]);
  });
});
