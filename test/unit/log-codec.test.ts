import { describe, expect, it } from 'vitest';
import { countEventTypes, decodeEvents, encodeEvents } from '../../server/engine/log-codec';
import type { LoggedEvent } from '../../server/engine/types';
import { seededRandom } from '../helpers/seeded-random';

/** What the JSON rows of before held: the events after a JSON round trip. */
const asJson = (events: LoggedEvent[]): LoggedEvent[] => JSON.parse(JSON.stringify(events)) as LoggedEvent[];

function randomValue(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 1 ? 6 : 8));
  if (pick === 0) return Math.floor(next() * 1_000) - 500;
  if (pick === 1) return next() * 1e6;
  if (pick === 2) return ['', 'a', 'ünïcødé ✓', '😀 emoji', 'x'.repeat(300), '"quoted"\n'][Math.floor(next() * 6)];
  if (pick === 3) return next() < 0.5;
  if (pick === 4) return null;
  if (pick === 5) return -0;
  if (pick === 6) return { nested: randomValue(next, depth + 1) };
  return [randomValue(next, depth + 1), 1];
}

function randomEvents(count: number, seed: number): LoggedEvent[] {
  const next = seededRandom(seed);
  const keys = ['amount', 'sku', 'ok', '1', 'a:b', '2:ab', ''];
  return Array.from({ length: count }, () => {
    const data: Record<string, unknown> = {};
    const size = Math.floor(next() * 4);
    for (let k = 0; k < size; k++) data[keys[Math.floor(next() * keys.length)]] = randomValue(next);
    return {
      user: Math.floor(next() * 2 ** 32),
      type: `t${Math.floor(next() * 5)}`,
      data,
      time: next() < 0.7 ? 1_700_000_000_000 : Math.floor(next() * 8.64e15),
    };
  });
}

describe('EventLog row format', () => {
  it('counts events per type from the type column alone, as decoding every event would (both row formats)', () => {
    for (let seed = 1; seed <= 10; seed++) {
      const events = randomEvents(100 * seed, seed);
      const expected = new Map<string, number>();
      for (const event of events) expected.set(event.type, (expected.get(event.type) ?? 0) + 1);
      for (const stored of [encodeEvents(events), Buffer.from(JSON.stringify(events)), JSON.stringify(events)]) {
        const counted = new Map<string, number>([['earlier', 1]]);
        countEventTypes(stored, counted);
        expect(counted).toEqual(new Map([['earlier', 1], ...expected]));
      }
    }
  });

  it('reads back exactly what a JSON row held, for events of every kind of data', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const events = randomEvents(200 + seed, seed);
      expect(decodeEvents(encodeEvents(events))).toEqual(asJson(events));
    }
  });

  it('keeps key order, empty data, one time for a batch stamped at once, and turns -0 into 0 as JSON does', () => {
    const events: LoggedEvent[] = [
      { user: 0, type: 'view', data: {}, time: 5 },
      { user: 4_294_967_295, type: 'purchase', data: { b: 1, a: -0, c: 'x' }, time: 5 },
      { user: 7, type: 'purchase', data: { a: 2, b: 1, c: 'y' }, time: 5 },
    ];
    const decoded = decodeEvents(encodeEvents(events));
    expect(decoded).toEqual(asJson(events));
    expect(decoded.map((e) => Object.keys(e.data))).toEqual([[], ['b', 'a', 'c'], ['a', 'b', 'c']]);
    expect(Object.is(decoded[1].data.a, 0)).toBe(true);
  });

  it('keeps what only JSON can hold: nested values, dropped undefined, non-finite numbers as null, a __proto__ key, huge keys and key lists, lone surrogates', () => {
    const parsed = JSON.parse('{"__proto__": 5, "n": 1}') as Record<string, unknown>;
    const events: LoggedEvent[] = [
      { user: 1, type: 'a', data: { deep: { list: [1, 'two', { three: 3 }] } }, time: 1 },
      { user: 2, type: 'a', data: { gone: undefined, kept: 1 }, time: 2 },
      { user: 3, type: 'a', data: { inf: Number.POSITIVE_INFINITY, nan: Number.NaN }, time: 3 },
      { user: 4, type: 'a', data: parsed, time: 4 },
      { user: 5, type: 'a', data: { ['ключ'.repeat(9_000)]: 1 }, time: 5 }, // 72,000 bytes of UTF-8: past a u16 length
      { user: 6, type: 'a', data: Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, i])), time: 6 }, // more keys than a u16
      // Lone surrogates: UTF-8 would turn each into U+FFFD (and two such keys into one); JSON keeps them.
      { user: 7, type: 'lone\ud800', data: { ['k\udc00']: 'v\ud800', ['k\udc01']: 1 }, time: 7 },
      { user: 8, type: 'a', data: { s: 'x\udfff' }, time: 8 },
    ];
    const decoded = decodeEvents(encodeEvents(events));
    expect(decoded).toEqual(asJson(events));
    expect(Object.getOwnPropertyNames(decoded[3].data)).toEqual(['__proto__', 'n']);
    expect(Object.getPrototypeOf(decoded[3].data)).toBe(Object.prototype);
    expect(decoded[6]).toEqual({ user: 7, type: 'lone\ud800', data: { ['k\udc00']: 'v\ud800', ['k\udc01']: 1 }, time: 7 });
  });

  it('is far smaller than the JSON row for a typical batch', () => {
    const events = Array.from({ length: 1_000 }, (_, i) => ({
      user: i * 7919,
      type: i % 10 ? 'view' : 'purchase',
      data: { amount: i % 200 },
      time: 1_700_000_000_000,
    }));
    expect(encodeEvents(events).length).toBeLessThan(Buffer.byteLength(JSON.stringify(events)) / 3);
  });

  it('reads rows written as JSON text before this format: a string (SQLite) or its UTF-8 bytes (PostgreSQL)', () => {
    const events: LoggedEvent[] = [{ user: 3, type: 'café', data: { n: 1 }, time: 9 }];
    expect(decodeEvents(JSON.stringify(events))).toEqual(events);
    expect(decodeEvents(new Uint8Array(Buffer.from(JSON.stringify(events))))).toEqual(events);
    expect(decodeEvents(encodeEvents([]))).toEqual([]);
  });

  it('refuses a row of an unknown format instead of guessing', () => {
    expect(() => decodeEvents(Buffer.from([9, 0, 0, 0, 0]))).toThrow(/unknown format 9/);
  });
});
