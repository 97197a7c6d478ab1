import { describe, expect, it } from 'vitest';
import { AppError } from '../../server/errors';
import { compileCondition, requireCondition, type ConditionInput, type CrowdMembership } from '../../server/conditions/compile';
import { celSyntaxProblem } from '../../core/conditions/parse';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const vipCrowd = new Set([1, 2, 3]);
const crowds: CrowdMembership = { has: (name, user) => name === 'vip' && vipCrowd.has(user) };

const click: ConditionInput = {
  user: 2,
  now: NOW,
  event: { type: 'click', data: { url: 'https://acme.com/pricing', amount: 42.5, count: 3, tags: ['a', 'b'] }, time: NOW - 60_000 },
  profile: { plan: 'pro', age: 31, country: 'FR', email: 'ana@acme.com', signup: '2026-03-01T00:00:00Z', optIn: true, tags: ['beta'] },
};

function holds(text: string, input: ConditionInput = click, membership: CrowdMembership = crowds): boolean {
  return compileCondition(requireCondition(text)).predicate(input, membership);
}

describe('condition variables and functions', () => {
  it('reads event.type and event.data fields', () => {
    expect(holds('event.type == "click"')).toBe(true);
    expect(holds('event.type == "open"')).toBe(false);
    expect(holds('event.data.amount > 40.0 && event.data.count == 3')).toBe(true);
    expect(holds('event.data.count >= 4')).toBe(false);
    expect(holds('"b" in event.data.tags')).toBe(true);
  });

  it('reads event.time as a timestamp', () => {
    expect(holds('now - event.time == duration("1m")')).toBe(true);
    expect(holds('event.time > now')).toBe(false);
  });

  it('reads profile fields by dot and by index', () => {
    expect(holds('profile.plan == "pro"')).toBe(true);
    expect(holds('profile["country"] == "FR"')).toBe(true);
    expect(holds('profile.age >= 18 && profile.age < 65')).toBe(true);
    expect(holds('profile.optIn')).toBe(true);
    expect(holds('profile.age == 30')).toBe(false);
  });

  it('gives now as a timestamp and compares durations', () => {
    expect(holds('now - timestamp(profile.signup) > duration("24h")')).toBe(true);
    expect(holds('now - timestamp(profile.signup) > duration("240h")')).toBe(false);
    expect(holds('now > timestamp("2026-03-10T11:59:59Z") && now.getHours() == 12')).toBe(true);
  });

  it('gives user as an int', () => {
    expect(holds('user == 2')).toBe(true);
    expect(holds('user % 2 == 0')).toBe(true);
    expect(holds('user > 2')).toBe(false);
  });

  it('asks the crowd membership for inCrowd', () => {
    expect(holds('inCrowd("vip")')).toBe(true);
    expect(holds('inCrowd("vip")', { ...click, user: 7 })).toBe(false);
    expect(holds('inCrowd("other")')).toBe(false);
    expect(holds('inCrowd("vip") && profile.age > 30')).toBe(true);
    expect(holds('(inCrowd("vip") ? profile.age : 0) > 30')).toBe(true);
  });

  it('has the CEL standard library: strings, regex, lists, macros, conversions', () => {
    expect(holds('profile.email.endsWith("@acme.com") && profile.email.startsWith("ana")')).toBe(true);
    expect(holds('profile.email.contains("acme")')).toBe(true);
    expect(holds('profile.email.matches("^[a-z]+@acme\\\\.com$")')).toBe(true);
    expect(holds('event.data.url.matches("/pricing$")')).toBe(true);
    expect(holds('profile.country in ["FR", "DE"]')).toBe(true);
    expect(holds('profile.country in ["US"]')).toBe(false);
    expect(holds('profile.tags.exists(t, t == "beta")')).toBe(true);
    expect(holds('size(profile.tags) == 1 && has(profile.plan) && !has(profile.vat)')).toBe(true);
    expect(holds('int(profile.age) + 1 == 32 && string(profile.age) == "31"')).toBe(true);
  });

  it('treats true and false literals as always and never', () => {
    expect(holds('true')).toBe(true);
    expect(holds('false')).toBe(false);
    expect(holds('true', { user: 9, now: NOW })).toBe(true);
  });

  it('reports what the condition reads', () => {
    const condition = compileCondition(requireCondition('inCrowd("vip") && profile.plan == "pro" && inCrowd("new") || event.type == "x" && now > event.time'));
    expect(condition).toMatchObject({ usesEvent: true, usesProfile: true, usesNow: true, crowds: ['new', 'vip'], profileFields: ['plan'] });
    expect(compileCondition(requireCondition('true'))).toMatchObject({ usesEvent: false, usesProfile: false, usesNow: false, crowds: [], profileFields: [] });
  });

  it('answers event.type equality without cel-js exactly as CEL would, with and without an event', () => {
    const buy = { user: 1, now: NOW, event: { type: 'buy', data: {}, time: NOW } };
    const none = { user: 1, now: NOW };
    expect(holds('event.type == "buy"', buy)).toBe(true);
    expect(holds('"buy" == event.type', buy)).toBe(true);
    expect(holds('event.type == "sell"', buy)).toBe(false);
    expect(holds('event.type == "buy"', none)).toBe(false);
    expect(holds('!(event.type == "buy")', none)).toBe(true);
    expect(holds('event.type == "buy" || user == 1', none)).toBe(true);
  });

  it('compares event.data numbers without cel-js exactly as cel-js does (checked against the same test as one CEL leaf)', () => {
    const texts = [
      'event.data.amount > 100',
      'event.data.amount >= 100.0',
      '100 < event.data.amount',
      'event.data["amount"] <= -1',
      'event.data.amount < 100.5',
    ];
    const amounts: unknown[] = [150, 100, 100.5, -2, 0, '150', true, null, undefined];
    for (const text of texts) {
      for (const amount of amounts) {
        const input = { user: 1, now: NOW, event: { type: 'buy', data: amount === undefined ? {} : { amount }, time: NOW } };
        // `(…) == true` is not a shape the compiler answers in JS: cel-js evaluates the whole test.
        expect(holds(text, input), `${text} with ${JSON.stringify(amount)}`).toBe(holds(`(${text}) == true`, input));
      }
      expect(holds(text, { user: 1, now: NOW }), `${text} without an event`).toBe(false);
    }
    expect(holds('event.data.amount > 100', { user: 1, now: NOW, event: { type: 'buy', data: { amount: 150 }, time: NOW } })).toBe(true);
  });

  it('builds the event timestamp only for conditions that can read event.time', () => {
    const event = { type: 'buy', data: { amount: 150 }, time: NOW - 1_000 };
    const input = { user: 1, now: NOW, event };
    for (const [text, expected] of [
      ['event.type == "buy" && event.data.amount > 100', true],
      ['event["type"] == "buy" && event.data["amount"] < 100', false],
      ['event.time < now', true],
      ['event["time"] > now', false],
      ['has(event.time) && event.type == "buy"', true],
      ['event.type == "buy" && now - event.time == duration("1s")', true],
    ] as const) {
      expect(holds(text, input), text).toBe(expected);
    }
  });
});

describe('missing values are false, never an exception', () => {
  const bare: ConditionInput = { user: 5, now: NOW };

  it.each([
    'event.type == "click"',
    'event.data.amount > 1',
    'profile.plan == "pro"',
    'profile.plan in ["pro", "free"]',
    'profile.age > 18',
    'profile.email.matches("x")',
    'now - timestamp(profile.signup) > duration("1h")',
    'inCrowd("vip")',
    'profile.optIn',
  ])('%s is false without event, profile or crowd', (text) => {
    expect(holds(text, bare)).toBe(false);
  });

  it('a missing field, a null, a type mismatch or a bad timestamp make the comparison false', () => {
    const odd: ConditionInput = { ...click, profile: { plan: null, age: 'thirty', signup: 'yesterday', nested: null } };
    expect(holds('profile.plan == "pro"', odd)).toBe(false);
    expect(holds('profile.age > 18', odd)).toBe(false);
    expect(holds('now - timestamp(profile.signup) > duration("1h")', odd)).toBe(false);
    expect(holds('profile.nested.deep == 1', odd)).toBe(false);
    expect(holds('event.data.missing.deeper == 1', odd)).toBe(false);
    expect(holds('profile.plan', odd)).toBe(false);
  });

  it('negating a comparison on a missing value is true, the same as the bitmap plan computes', () => {
    expect(holds('!(profile.plan == "pro")', { user: 5, now: NOW })).toBe(true);
    expect(holds('!(profile.age > 18)', { user: 5, now: NOW })).toBe(true);
    expect(holds('!(profile.plan == "pro")')).toBe(false);
  });

  it('a missing value on one side of || does not hide a true other side', () => {
    expect(holds('profile.missing == 1 || event.type == "click"')).toBe(true);
    expect(holds('event.type == "click" || profile.missing == 1')).toBe(true);
    expect(holds('profile.missing == 1 && event.type == "click"')).toBe(false);
  });

  it('a non-boolean dynamic result is false', () => {
    expect(holds('profile.plan')).toBe(false);
    expect(holds('event.data.count')).toBe(false);
  });
});

describe('bad CEL is refused with a clear message', () => {
  it.each([
    ['event.type == ', /Unexpected token/],
    ['profile.plan == "pro" &&& true', /Unexpected character/],
    ['"unterminated', /Unterminated string/],
    ['segment == "x"', /Unknown variable: segment/],
    ['isVip(user)', /no matching overload for 'isVip/],
    ['inCrowd(1)', /no matching overload for 'inCrowd\(int\)'/],
    ['inCrowd(profile.segment)', /inCrowd\(\) takes a crowd name in quotes/],
    ['inCrowd("")', /inCrowd\(\) takes a crowd name in quotes/],
    ['user + 1', /must be true or false, but it gives a int/],
    ['"pro"', /must be true or false, but it gives a string/],
    ['user == "5"', /no such overload/],
    ['', /condition is empty/],
  ])('%j', (text, message) => {
    expect(celSyntaxProblem(text)).toMatch(message);
    let thrown: unknown;
    try {
      requireCondition(text);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe('invalid_condition');
    expect((thrown as AppError).message).toMatch(/^The condition is not valid: /);
    expect((thrown as AppError).message).toMatch(message);
  });

  it('names the position of a syntax error', () => {
    expect(celSyntaxProblem('profile.plan == "pro" &&& true')).toBe('Unexpected character: & (at character 25)');
  });

  it('accepts every valid condition', () => {
    for (const text of ['true', 'inCrowd("vip")', 'profile.a == 1 || !(event.type in ["x", "y"])', 'now > timestamp("2026-01-01T00:00:00Z")']) {
      expect(celSyntaxProblem(text)).toBeNull();
    }
  });

  it('compiles once per text, and the shared result cannot be altered by a caller', () => {
    const condition = compileCondition(requireCondition('inCrowd("vip") && profile.plan == "cached"'));
    expect(compileCondition(requireCondition('inCrowd("vip") && profile.plan == "cached"'))).toBe(condition);
    expect(() => (condition.crowds as string[]).push('other')).toThrow(TypeError);
    expect(() => {
      (condition.plan as { op: string }).op = 'all';
    }).toThrow(TypeError);
    expect(condition.plan).toEqual({
      op: 'and',
      args: [
        { op: 'crowd', name: 'vip' },
        { op: 'profileEq', field: 'plan', value: 'cached' },
      ],
    });
  });
});
