import fc from 'fast-check';
import roaring from 'roaring';
import { describe, expect, it } from 'vitest';
import { compareNumbers, MAX_DISTINCT_STRINGS, thresholds, type Comparison } from '../../server/profiles/index-field';
import { applyRelayedWrite, relayedWrite } from '../../server/profiles/index-store';
import { ProfileIndex, type Attributes, type ProfileChange } from '../../server/profiles/index-tenant';
import { celTimestampMs, pathKey } from '../../core/profile-paths';
import { mergeAttributes } from '../../server/profiles/profiles';

const { RoaringBitmap32 } = roaring;

// Random operations (merge upserts, deletes, tenant clears) run against the index and against a naive model (a Map
// of profiles), and every query is compared after each step: equality, numeric ranges, timestamps, has(), and the
// profiles read back from the index.

const USERS = 40;
const numbers = fc.oneof(
  fc.integer({ min: -300, max: 300 }),
  fc.constantFrom(0, -0, 0.5, -2.25, 12.99, 1e-3, 1 / 3, 1e20, -9007199254740991, 9007199254740991, 123456.789),
);
const strings = fc.constantFrom('pro', 'free', 'trial', '', 'NL', '2026-01-01T00:00:00Z', '2025-06-30T12:00:00+02:00', '1969-12-31T23:59:59.999Z', 'a.b');
const scalar = fc.oneof(numbers, strings, fc.boolean());
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: scalar },
  { weight: 1, arbitrary: fc.constant(null) }, // a merge patch null removes the key
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 2 }) },
  {
    weight: 2,
    arbitrary: fc.dictionary(fc.constantFrom('city', 'zip', 'geo'), fc.oneof(scalar, fc.constant(null), fc.dictionary(fc.constantFrom('lat'), numbers)), {
      maxKeys: 3,
    }),
  },
);
const patch = fc.dictionary(fc.constantFrom('plan', 'age', 'score', 'signup', 'address', 'tags', 'a.b'), value, { maxKeys: 4 }) as fc.Arbitrary<Attributes>;
const operation = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('upsert' as const),
      items: fc.array(fc.record({ user: fc.nat(USERS - 1), patch }), { minLength: 1, maxLength: 6 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), user: fc.nat(USERS - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const) }) },
);

const PATHS = [['plan'], ['age'], ['score'], ['signup'], ['address'], ['address', 'city'], ['address', 'geo'], ['address', 'geo', 'lat'], ['tags'], ['a.b']];
const EQUALS: Array<string | number | boolean> = ['pro', 'free', '', 'NL', 'a.b', 0, 1, -2.25, 12.99, 1 / 3, 1e20, 9007199254740991, true, false];
const BOUNDS = [-300, -2.25, -0.5, 0, 0.001, 1 / 3, 12.99, 100, 1e20, -9007199254740991];
const TIMES = ['2026-01-01T00:00:00Z', '1970-01-01T00:00:00Z', '2025-06-30T10:00:00Z'].map((t) => celTimestampMs(t)!);
const OPS: Comparison[] = ['<', '<=', '>', '>=', '=='];

function at(profile: Attributes | undefined, path: string[]): unknown {
  let value: unknown = profile;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Attributes)[segment];
  }
  return value;
}

function expectAgreement(index: ProfileIndex, model: Map<number, Attributes>) {
  const all = new RoaringBitmap32(Array.from({ length: USERS }, (_, u) => u));
  const expected = (test: (value: unknown) => boolean, path: string[]) =>
    [...model]
      .filter(([, profile]) => {
        const v = at(profile, path);
        return v !== undefined && test(v);
      })
      .map(([user]) => user)
      .sort((a, b) => a - b);
  expect(index.users.toArray()).toEqual([...model.keys()].sort((a, b) => a - b));
  for (const path of PATHS) {
    const key = pathKey(path);
    expect(index.has(key, all).toArray(), `has ${path}`).toEqual(expected(() => true, path));
    for (const v of EQUALS) expect(index.equals(key, v, all).toArray(), `${path} == ${v}`).toEqual(expected((actual) => actual === v, path));
    for (const op of OPS) {
      for (const bound of BOUNDS) {
        expect(index.compare(key, op, bound, all).toArray(), `${path} ${op} ${bound}`).toEqual(
          expected((actual) => typeof actual === 'number' && compareNumbers(actual, op, bound), path),
        );
      }
      for (const ms of TIMES) {
        const asTime = (actual: unknown) => (typeof actual === 'string' ? celTimestampMs(actual) : null);
        expect(index.compareTime(key, op, ms, all).toArray(), `timestamp(${path}) ${op} ${ms}`).toEqual(
          expected((actual) => asTime(actual) !== null && compareNumbers(asTime(actual)!, op, ms), path),
        );
      }
    }
  }
  const read = index.materialize(all);
  expect(Object.fromEntries(read)).toEqual(Object.fromEntries(model));
  expect(Object.fromEntries(index.materialize(all, ['address']))).toEqual(
    Object.fromEntries([...model].map(([user, profile]) => [user, 'address' in profile ? { address: profile.address } : {}])),
  );
}

/** Both indexes hold the same bitmaps and per-user values for every path: they answer every query alike. */
function expectSameIndex(actual: ProfileIndex, expected: ProfileIndex) {
  expect(actual.users.toArray()).toEqual(expected.users.toArray());
  const fields = (index: ProfileIndex) =>
    Object.fromEntries(
      index.paths().map(({ key, field }) => [
        key,
        {
          scale: field.scale,
          strings: Object.fromEntries([...field.strings].map(([value, users]) => [value, users.toArray()])),
          bitmaps: [field.presence, field.objects, field.trues, field.falses, ...field.numbers.bitmaps(), ...field.times.bitmaps()].map((b) => b.toArray()),
          highCardinality: field.highCardinality && Object.fromEntries(field.highCardinality),
          others: Object.fromEntries(field.others),
        },
      ]),
    );
  expect(fields(actual)).toEqual(fields(expected));
}

describe('ProfileIndex against a naive model (fast-check)', () => {
  it('agrees on every query after every operation, and so does a copy fed the writes as relayed to the engine thread', () => {
    fc.assert(
      fc.property(fc.array(operation, { minLength: 1, maxLength: 25 }), (operations) => {
        const index = new ProfileIndex();
        // The engine thread's copy: it gets each write as relayed across threads (users and afters only).
        const engineCopy = new ProfileIndex();
        const model = new Map<number, Attributes>();
        let writes = 0;
        const commit = (changes: ProfileChange[]) => {
          index.apply(changes);
          // Every other write relays the JSON texts its rows were written with, as an import does.
          const texts = ++writes % 2 === 0 ? changes.map((change) => JSON.stringify(change.after ?? null)) : undefined;
          applyRelayedWrite(engineCopy, relayedWrite(changes, texts));
        };
        for (const op of operations) {
          if (op.kind === 'upsert') {
            // one committed call: each user's profile before the call and after all of its items
            const before = new Map(op.items.map(({ user }) => [user, model.get(user)]));
            // through JSON, as stored profiles are (-0 becomes 0)
            for (const { user, patch } of op.items) model.set(user, mergeAttributes(model.get(user) ?? {}, JSON.parse(JSON.stringify(patch))));
            commit([...before].map(([user, old]) => ({ user, before: old, after: model.get(user) })));
          } else if (op.kind === 'delete') {
            if (model.has(op.user)) commit([{ user: op.user, before: model.get(op.user) }]);
            model.delete(op.user);
          } else {
            index.clear();
            engineCopy.clear();
            model.clear();
          }
          expectAgreement(index, model);
          expectSameIndex(engineCopy, index);
        }
      }),
      { numRuns: 150, seed: 20261201 },
    );
  }, 180_000); // thousands of queries per run: ~40 s on a loaded 2-core machine

  it('rescales a number path when a value needs more decimals, and keeps comparisons exact', () => {
    const index = new ProfileIndex();
    index.apply([
      { user: 1, after: { price: 12 } },
      { user: 2, after: { price: 7 } },
      { user: 3, after: { price: -4 } },
    ]);
    index.apply([{ user: 4, after: { price: 12.99 } }]);
    expect(index.path('price')!.scale).toBe(2);
    expect(index.compare('price', '>', 12).toArray()).toEqual([4]);
    expect(index.compare('price', '>=', 12).toArray()).toEqual([1, 4]);
    expect(index.compare('price', '<', 0).toArray()).toEqual([3]);
    expect(index.equals('price', 12.99).toArray()).toEqual([4]);
  });

  it('turns a path with more than the distinct-value cap into a per-user map, and still answers equality', () => {
    const index = new ProfileIndex();
    const changes = Array.from({ length: MAX_DISTINCT_STRINGS + 10 }, (_, user) => ({
      user,
      after: { email: `u${user}@example.com`, plan: user % 2 ? 'pro' : 'free' },
    }));
    index.apply(changes);
    expect(index.path('email')!.highCardinality?.size).toBe(MAX_DISTINCT_STRINGS + 10);
    expect(index.path('email')!.strings.size).toBe(0);
    expect(index.equals('email', 'u77@example.com').toArray()).toEqual([77]);
    expect(index.path('plan')!.highCardinality).toBeNull();
    index.apply([{ user: 77, before: changes[77].after, after: { plan: 'pro' } }]);
    expect(index.equals('email', 'u77@example.com').toArray()).toEqual([]);
    expect(index.get(77)).toEqual({ plan: 'pro' });
  });

  it('computes exact fixed-point thresholds', () => {
    // 0.3 * 10 is 3.0000000000000004 in doubles: the threshold must still be 3.
    expect(thresholds(0.3, 1)).toEqual({ atMost: 3, atLeast: 3 });
    expect(thresholds(0.35, 1)).toEqual({ atMost: 3, atLeast: 4 });
    expect(thresholds(-0.35, 1)).toEqual({ atMost: -4, atLeast: -3 });
    expect(thresholds(Number.POSITIVE_INFINITY, 0).atMost).toBe(Number.MAX_SAFE_INTEGER + 1);
  });
});
