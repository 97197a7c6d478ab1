import roaring from 'roaring';
import { describe, expect, it } from 'vitest';
import { compileCondition, requireCondition, evaluatePlan } from '../../server/conditions/compile';
import { ProfileIndex, planResolver } from '../../server/profiles/index-plan';

const { RoaringBitmap32 } = roaring;

const users = (bitmap: { toArray(): number[] }) => bitmap.toArray();

describe('ProfileIndex', () => {
  it('keeps a bitmap per field and scalar value', () => {
    const index = new ProfileIndex();
    index.set(1, { plan: 'pro', age: 30, optIn: true });
    index.set(2, { plan: 'free', age: 30.0, optIn: false });
    index.set(3, { plan: 'pro', age: '30' });
    expect(users(index.equals('plan', 'pro'))).toEqual([1, 3]);
    expect(users(index.equals('plan', 'free'))).toEqual([2]);
    expect(users(index.equals('age', 30))).toEqual([1, 2]);
    expect(users(index.equals('age', '30'))).toEqual([3]);
    expect(users(index.equals('optIn', true))).toEqual([1]);
    expect(users(index.equals('optIn', false))).toEqual([2]);
    expect(users(index.equals('plan', 'gold'))).toEqual([]);
    expect(users(index.equals('missing', 'x'))).toEqual([]);
    expect(index.size).toBe(3);
    expect(index.get(2)).toEqual({ plan: 'free', age: 30, optIn: false });
  });

  it('moves a user between bitmaps when a value changes', () => {
    const index = new ProfileIndex();
    index.set(7, { plan: 'trial', country: 'FR' });
    index.set(8, { plan: 'trial', country: 'DE' });
    index.set(7, { plan: 'pro', country: 'FR' });
    expect(users(index.equals('plan', 'trial'))).toEqual([8]);
    expect(users(index.equals('plan', 'pro'))).toEqual([7]);
    expect(users(index.equals('country', 'FR'))).toEqual([7]);
  });

  it('drops a user from a field that the new attributes no longer have, and indexes new fields', () => {
    const index = new ProfileIndex();
    index.set(4, { plan: 'pro', country: 'FR' });
    index.set(4, { plan: 'pro', segment: 'b2b' });
    expect(users(index.equals('country', 'FR'))).toEqual([]);
    expect(users(index.equals('segment', 'b2b'))).toEqual([4]);
    expect(users(index.equals('plan', 'pro'))).toEqual([4]);
  });

  it('does not index lists, maps or nulls, and unindexes them cleanly when they become scalars', () => {
    const index = new ProfileIndex();
    index.set(5, { tags: ['a'], address: { city: 'Paris' }, plan: null });
    expect(users(index.equals('tags', 'a'))).toEqual([]);
    index.set(5, { tags: 'a', plan: 'pro' });
    expect(users(index.equals('tags', 'a'))).toEqual([5]);
    expect(users(index.equals('plan', 'pro'))).toEqual([5]);
  });

  it('removes a user from every bitmap', () => {
    const index = new ProfileIndex();
    index.set(1, { plan: 'pro', country: 'FR' });
    index.set(2, { plan: 'pro' });
    index.remove(1);
    index.remove(99);
    expect(users(index.equals('plan', 'pro'))).toEqual([2]);
    expect(users(index.equals('country', 'FR'))).toEqual([]);
    expect(index.get(1)).toBeUndefined();
    expect(index.size).toBe(1);
  });

  it('serves a timer plan: a profile change alone changes who the plan selects', () => {
    const index = new ProfileIndex();
    const vip = new RoaringBitmap32([1, 2, 3]);
    const resolver = planResolver((name) => (name === 'vip' ? vip : undefined), index);
    const plan = compileCondition(requireCondition('inCrowd("vip") && profile.plan == "pro"')).plan!;
    const step = new RoaringBitmap32([1, 2, 3, 4]);
    index.set(1, { plan: 'pro' });
    index.set(4, { plan: 'pro' });
    expect(users(evaluatePlan(plan, resolver, step))).toEqual([1]);
    index.set(2, { plan: 'pro' });
    index.set(1, { plan: 'free' });
    expect(users(evaluatePlan(plan, resolver, step))).toEqual([2]);
  });
});
