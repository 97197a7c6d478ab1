import roaring from 'roaring';
import { describe, expect, it } from 'vitest';
import { compileCondition, requireCondition, evaluatePlan, type BitmapPlan, type CrowdMembership } from '../../server/conditions/compile';
import { evaluateIndexedPlan, ProfileIndex, planResolver } from '../../server/profiles/index-plan';
import { conditionEnvironment } from '../../core/conditions/environment';
import { mergeAttributes } from '../../server/profiles/profiles';
import { seededRandom } from '../helpers/seeded-random';

const { RoaringBitmap32 } = roaring;

describe('plan extraction', () => {
  it.each<[string, BitmapPlan]>([
    ['true', { op: 'all' }],
    ['false', { op: 'none' }],
    ['inCrowd("vip")', { op: 'crowd', name: 'vip' }],
    ['profile.plan == "pro"', { op: 'profileEq', field: 'plan', value: 'pro' }],
    ['"pro" == profile["plan"]', { op: 'profileEq', field: 'plan', value: 'pro' }],
    ['profile.age == 30', { op: 'profileEq', field: 'age', value: 30 }],
    ['profile.score == -2.5', { op: 'profileEq', field: 'score', value: -2.5 }],
    ['profile.optIn == true', { op: 'profileEq', field: 'optIn', value: true }],
    ['profile.country in ["FR", "DE"]', { op: 'profileIn', field: 'country', values: ['FR', 'DE'] }],
    ['!inCrowd("churned")', { op: 'not', arg: { op: 'crowd', name: 'churned' } }],
    [
      'inCrowd("a") && inCrowd("b") && !inCrowd("c")',
      {
        op: 'and',
        args: [
          { op: 'crowd', name: 'a' },
          { op: 'crowd', name: 'b' },
          { op: 'not', arg: { op: 'crowd', name: 'c' } },
        ],
      },
    ],
    [
      '(inCrowd("a") || profile.plan == "pro") && !(profile.country in ["US"] || false)',
      {
        op: 'and',
        args: [
          {
            op: 'or',
            args: [
              { op: 'crowd', name: 'a' },
              { op: 'profileEq', field: 'plan', value: 'pro' },
            ],
          },
          { op: 'not', arg: { op: 'or', args: [{ op: 'profileIn', field: 'country', values: ['US'] }, { op: 'none' }] } },
        ],
      },
    ],
    ['profile.age >= 30', { op: 'profileCmp', field: 'age', cmp: '>=', value: 30 }],
    ['30 < profile.age', { op: 'profileCmp', field: 'age', cmp: '>', value: 30 }],
    ['profile.score <= -2.5', { op: 'profileCmp', field: 'score', cmp: '<=', value: -2.5 }],
    ['has(profile.plan)', { op: 'profileHas', field: 'plan' }],
    ['profile.address.city == "Paris"', { op: 'profileEq', field: 'address\u001fcity', value: 'Paris' }],
    [
      'profile.plan != "pro"',
      {
        op: 'and',
        args: [
          { op: 'profileHas', field: 'plan' },
          { op: 'not', arg: { op: 'profileEq', field: 'plan', value: 'pro' } },
        ],
      },
    ],
    [
      'timestamp(profile.signup) >= timestamp("2026-01-01T00:00:00Z")',
      { op: 'profileTime', field: 'signup', cmp: '>=', at: Date.parse('2026-01-01T00:00:00Z') },
    ],
    ['timestamp(profile.signup) < timestamp("not a time at all, no")', { op: 'none' }],
    ['user == 5', { op: 'userRange', from: 5, to: 5 }],
    [
      'user >= 1 && user <= 3000',
      {
        op: 'and',
        args: [
          { op: 'userRange', from: 1, to: 0xffff_ffff },
          { op: 'userRange', from: 0, to: 3000 },
        ],
      },
    ],
    ['10 > user', { op: 'userRange', from: 0, to: 9 }],
    ['user > -3', { op: 'userRange', from: 0, to: 0xffff_ffff }],
    ['user < 0', { op: 'none' }],
    ['user >= 9223372036854775807', { op: 'none' }],
    ['user != 7', { op: 'not', arg: { op: 'userRange', from: 7, to: 7 } }],
    [
      'user in [3, 1]',
      {
        op: 'or',
        args: [
          { op: 'userRange', from: 3, to: 3 },
          { op: 'userRange', from: 1, to: 1 },
        ],
      },
    ],
  ])('%s', (text, plan) => {
    expect(compileCondition(requireCondition(text)).plan).toEqual(plan);
  });

  it.each([
    'event.type == "click"',
    'inCrowd("vip") && event.type == "click"',
    'profile.plan > "m"',
    'profile.age > 9007199254740993',
    'user % 10 == 0',
    'user >= 1.5',
    'user < 3u',
    'user in [1, 2.5]',
    'now > timestamp("2026-01-01T00:00:00Z")',
    'profile.optIn',
    'profile.plan == profile.previousPlan',
    '"beta" in profile.tags',
    'profile.plan.startsWith("pro")',
    'inCrowd("vip") ? true : false',
    'timestamp(profile.signup) < now',
  ])('%s has no plan', (text) => {
    expect(compileCondition(requireCondition(text)).plan).toBeNull();
  });
});

const CROWDS = ['a', 'b', 'c', 'empty'];
const FIELDS: Record<string, unknown[]> = {
  plan: ['pro', 'free', 'trial', undefined, null],
  country: ['FR', 'DE', 'US', 'GB', undefined],
  age: [18, 30, 30.5, 65, '30', -4, 1 / 3, 1e20, undefined],
  optIn: [true, false, 'true', undefined],
  signup: ['2026-01-01T00:00:00Z', '2025-12-31T23:00:00-02:00', '2025-06-01T00:00:00.250Z', 'soon', 20260101, undefined],
  address: [{ city: 'Paris', zip: 75001 }, { city: 'Lyon' }, {}, 'Paris', { zip: '75001' }, undefined],
};
const LITERALS: Record<string, string[]> = {
  plan: ['"pro"', '"free"', '"trial"', '"gold"'],
  country: ['"FR"', '"DE"', '"US"'],
  age: ['30', '18', '30.5', '65', '-1'],
  optIn: ['true', 'false'],
  signup: ['"2026-01-01T00:00:00Z"'],
  address: ['"Paris"'],
};
const NUMBERS = ['30', '30.5', '-1', '0', '65', '0.3333', '1e20', '-4'];
const TIMES = ['"2026-01-01T00:00:00Z"', '"2025-12-31T23:00:00Z"', '"2026-01-01T01:00:00+01:00"', '"2025-06-01T00:00:00.250Z"'];
const NESTED = ['profile.address.city', 'profile.address.zip', 'profile["address"].city'];

function randomCondition(random: () => number, depth: number): string {
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];
  const choice = depth <= 0 ? Math.floor(random() * 4) : Math.floor(random() * 7);
  if (random() < 0.4) return rangeOrHas(random, pick);
  switch (choice) {
    case 0:
      return `inCrowd("${pick(CROWDS)}")`;
    case 1: {
      const field = pick(Object.keys(FIELDS));
      return random() < 0.5 ? `profile.${field} == ${pick(LITERALS[field])}` : `${pick(LITERALS[field])} == profile["${field}"]`;
    }
    case 2: {
      const field = pick(Object.keys(FIELDS));
      const values = Array.from({ length: Math.floor(random() * 3) + 1 }, () => pick(LITERALS[field]));
      return `profile.${field} in [${values.join(', ')}]`;
    }
    case 3:
      return random() < 0.9 ? `inCrowd("${pick(CROWDS)}")` : pick(['true', 'false']);
    case 4:
      return `!(${randomCondition(random, depth - 1)})`;
    default:
      return `(${randomCondition(random, depth - 1)} ${choice === 5 ? '&&' : '||'} ${randomCondition(random, depth - 1)})`;
  }
}

/** The leaves added with the bit-sliced index: numeric ranges, !=, has(), nested paths and timestamp comparisons. */
function rangeOrHas(random: () => number, pick: <T>(items: T[]) => T): string {
  const op = pick(['<', '<=', '>', '>=']);
  switch (Math.floor(random() * 6)) {
    case 0:
      return random() < 0.5 ? `profile.age ${op} ${pick(NUMBERS)}` : `${pick(NUMBERS)} ${op} profile.age`;
    case 1:
      return `has(${pick(['profile.plan', 'profile.age', 'profile.address', 'profile.address.city', 'profile.address.zip', 'profile.nothing'])})`;
    case 2: {
      const field = pick(Object.keys(LITERALS));
      return `profile.${field} != ${pick([...LITERALS[field], ...NUMBERS.slice(0, 2)])}`;
    }
    case 3:
      return `${pick(NESTED)} ${pick(['==', '!=', op])} ${pick(['"Paris"', '"Lyon"', '75001', '"75001"'])}`.replace(/ [<>]=? "(\w+)"/, ' == "$1"');
    case 4:
      return `timestamp(profile.signup) ${pick([op, '=='])} timestamp(${pick(TIMES)})`;
    default:
      return `profile.age in [${pick(NUMBERS)}, ${pick(NUMBERS)}]`;
  }
}

describe('evaluatePlan equals the predicate applied per user', () => {
  const random = seededRandom(20260310);
  const USERS = 100_000;
  const crowdBitmaps = new Map(CROWDS.map((name) => [name, new RoaringBitmap32()]));
  const profiles = new ProfileIndex();
  // What the database would hold: JSON Merge Patch drops null attributes.
  const stored = new Map<number, Record<string, unknown>>();
  const density: Record<string, number> = { a: 0.5, b: 0.1, c: 0.9, empty: 0 };
  for (let user = 0; user < USERS; user++) {
    for (const name of CROWDS) if (random() < density[name]) crowdBitmaps.get(name)!.add(user);
    if (random() < 0.15) continue; // no profile at all
    const attributes: Record<string, unknown> = {};
    for (const [field, values] of Object.entries(FIELDS)) {
      const value = values[Math.floor(random() * values.length)];
      if (value !== undefined) attributes[field] = value;
    }
    stored.set(user, mergeAttributes({}, attributes));
  }
  profiles.apply([...stored].map(([user, after]) => ({ user, after })));
  // The universe (e.g. the users of a timer step) leaves out some users and holds users beyond the crowds' range.
  const universe = new RoaringBitmap32();
  for (let user = 0; user < USERS + 5_000; user++) if (random() < 0.8) universe.add(user);
  const universeUsers = universe.toArray();
  const membership: CrowdMembership = { has: (name, user) => crowdBitmaps.get(name)?.has(user) ?? false };
  const resolver = planResolver((name) => crowdBitmaps.get(name), profiles);

  // Random conditions run over every 8th user of the universe: cel-js leaves cost microseconds per user.
  const sample = RoaringBitmap32.from(universeUsers.filter((user) => user % 8 === 0));
  const sampleUsers = sample.toArray();

  function expectPlanMatchesPredicate(text: string, users = universe, userList = universeUsers) {
    const condition = compileCondition(requireCondition(text));
    expect(condition.plan, text).not.toBeNull();
    const viaPlan = evaluatePlan(condition.plan!, resolver, users);
    const viaPredicate = userList.filter((user) => condition.predicate({ user, now: 0, profile: stored.get(user) }, membership));
    expect(viaPlan.size, text).toBe(viaPredicate.length);
    expect(viaPlan.toArray(), text).toEqual(viaPredicate);
  }

  it.each([
    'true',
    'false',
    'inCrowd("a")',
    'inCrowd("empty")',
    'inCrowd("unknown")',
    '!inCrowd("a")',
    'inCrowd("a") && inCrowd("b")',
    'inCrowd("a") || inCrowd("b") || inCrowd("c")',
    'inCrowd("c") && !inCrowd("a") && !inCrowd("b")',
    'profile.plan == "pro"',
    '!(profile.plan == "pro")',
    'profile.age == 30',
    'profile.age == 30.5',
    'profile.optIn == true',
    'profile.country in ["FR", "DE"]',
    '!(profile.country in ["FR", "DE"]) && inCrowd("a")',
    '(inCrowd("a") || profile.plan == "pro") && !(profile.country in ["US"] || profile.optIn == false)',
    'profile.age >= 30',
    'profile.age < 30.5',
    'profile.age > -5 && profile.age <= 0.3333333333333333',
    '!(profile.age >= 18)',
    'profile.age > 1e19',
    'has(profile.address.city) && !has(profile.plan)',
    'profile.plan != "pro"',
    '!(profile.plan != "pro")',
    'profile.address.zip == 75001 || profile.address.city != "Paris"',
    'timestamp(profile.signup) >= timestamp("2026-01-01T00:00:00Z")',
    'timestamp(profile.signup) == timestamp("2026-01-01T01:00:00+01:00")',
    'profile.plan == "pro" && profile.age >= 30',
    'profile.plan == "pro" && user >= 1 && user <= 3000',
    'user < 50000 || user > 100000',
    '!(user >= 20000) && inCrowd("a")',
    'user != 17 && user != 18',
    'user in [0, 5, 99999, 104999, 200000]',
    'user == 4294967295 || user <= 0',
  ])('%s', (text) => {
    expectPlanMatchesPredicate(text);
  });

  it('reads every profile back from the index as stored', () => {
    expect(Object.fromEntries(profiles.materialize(universe))).toEqual(Object.fromEntries([...stored].filter(([user]) => universe.has(user))));
  });

  it('answers profile number comparisons as cel-js does when it evaluates the whole text', () => {
    const texts = [
      'profile.age <= 0.3333333333333333',
      '0.3333333333333333 >= profile.age',
      'profile.age > -4',
      'profile.age < 1e20',
      'profile.address.zip >= 75001',
      'profile.age > 18',
    ];
    for (const text of texts) {
      const direct = conditionEnvironment.parse(text);
      const predicate = compileCondition(requireCondition(text)).predicate;
      for (const [user, profile] of [...stored].slice(0, 3000)) {
        let expected: boolean;
        try {
          expected = direct({ profile }) === true;
        } catch {
          expected = false;
        }
        expect(predicate({ user, now: 0, profile }, membership), `${text} on ${JSON.stringify(profile)}`).toBe(expected);
      }
    }
  });

  it('on 300 random conditions (seeded)', () => {
    const conditions = seededRandom(7);
    for (let i = 0; i < 300; i++) expectPlanMatchesPredicate(randomCondition(conditions, 3), sample, sampleUsers);
  });

  it('evaluateIndexedPlan (a result over the whole index, reused) answers as evaluatePlan: per partition, after profile writes, after a crowd is replaced', () => {
    const index = new ProfileIndex();
    index.apply([...stored].map(([user, after]) => ({ user, after })));
    const crowds = new Map(crowdBitmaps);
    const indexed = planResolver((name) => crowds.get(name), index);
    // A timer's users by partition (user % 8): each an eighth of the universe, spread over the whole id range.
    const partitions = Array.from({ length: 8 }, (_, p) => RoaringBitmap32.from(universeUsers.filter((user) => user % 8 === p)));
    const conditions = seededRandom(11);
    const texts = [
      'profile.plan == "pro" && profile.age >= 30',
      '!(profile.plan == "pro")',
      'inCrowd("a") && profile.age < 30',
      ...Array.from({ length: 15 }, () => randomCondition(conditions, 3)),
    ];
    const expectSameAnswers = (stage: string) => {
      for (const text of texts) {
        const plan = compileCondition(requireCondition(text)).plan!;
        for (const users of [...partitions, universe])
          expect(evaluateIndexedPlan(plan, indexed, users).toArray(), `${stage}: ${text}`).toEqual(evaluatePlan(plan, indexed, users).toArray());
      }
    };
    expectSameAnswers('first');
    expect(index.planResults.size).toBeGreaterThan(0);
    expectSameAnswers('cached');
    // Profile writes in every partition: every third user with a profile changes, every seventh is deleted.
    const writes = [...stored].filter(([user]) => user % 3 === 0 || user % 7 === 0);
    index.apply(
      writes.map(([user, before]) => ({ user, before, after: user % 7 === 0 ? undefined : { plan: before.plan === 'pro' ? 'free' : 'pro', age: 29 } })),
    );
    expectSameAnswers('after profile writes');
    crowds.set('a', RoaringBitmap32.from(universeUsers.filter((user) => user % 3 === 0)));
    expectSameAnswers('after crowd "a" was replaced');
  }, 180_000); // 18 conditions × 9 user sets × 4 stages, twice each: ~40 s on a loaded 2-core machine

  it('never mutates the crowd or index bitmaps it is given', () => {
    const sizes = CROWDS.map((name) => crowdBitmaps.get(name)!.size);
    const pro = profiles.equals('plan', 'pro').size;
    evaluatePlan(compileCondition(requireCondition('!(profile.age >= 30) || has(profile.plan)')).plan!, resolver, universe);
    evaluatePlan(compileCondition(requireCondition('!(inCrowd("a") && profile.plan == "pro") || inCrowd("b")')).plan!, resolver, universe);
    expect(CROWDS.map((name) => crowdBitmaps.get(name)!.size)).toEqual(sizes);
    expect(profiles.equals('plan', 'pro').size).toBe(pro);
  });
});
