import { describe, expect, it } from 'vitest';
import { csvRows } from '../../server/exports/table-format';
import type { ColumnValues } from '../../server/profiles/columns';
import { rowsIn } from '../../server/profiles/columns';

// CSV pages of exports with columns are written as bytes (digits by arithmetic, strings from pre-encoded dictionaries):
// every cell must read as the text String() and RFC 4180 quoting would give.
const quoted = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

describe('CSV rows of an export with columns', () => {
  it('writes IDs, whole numbers of any sign and size, doubles, booleans, times and quoted strings as their text', () => {
    const ids = Uint32Array.from([0, 7, 10, 4_294_967_295, 123_456]);
    const numbers = [0, -1, 2 ** 53 - 1, -(2 ** 53 - 1), 4_294_967_296];
    const doubles = [0.5, -1e-9, 1e300, 42, -3.25];
    const times = [0, Date.UTC(2026, 11, 5, 12, 30), -86_400_000, 253_402_300_799_999, 1];
    const dictionary = ['plain', 'with, comma', 'say "hi"', 'line\nbreak', 'ünïcödé'];
    const codes = Int32Array.from([0, 1, 2, -1, 4]);
    const present = Uint8Array.from([1, 1, 1, 1, 0]);
    const columns: ColumnValues[] = [
      { kind: 'int64', values: Float64Array.from(numbers), present },
      { kind: 'double', values: Float64Array.from(doubles), present },
      { kind: 'boolean', values: Float64Array.from([1, 0, 1, 0, 1]), present },
      { kind: 'timestamp', values: Float64Array.from(times), present },
      { kind: 'string', dictionary, codes },
    ];
    const expected = [...ids].map((id, row) => {
      const on = present[row] === 1;
      const cells = [
        on ? String(numbers[row]) : '',
        on ? String(doubles[row]) : '',
        on ? String(row % 2 === 0) : '',
        on ? new Date(times[row]).toISOString() : '',
        codes[row] < 0 ? '' : quoted(dictionary[codes[row]]),
      ];
      return `${[id, ...cells].join(',')}\n`;
    });
    expect(new TextDecoder().decode(csvRows(ids, columns))).toBe(expected.join(''));
  });

  it('writes every number of digits of IDs and whole numbers, each digit pair included', () => {
    const edges = Array.from({ length: 10 }, (_, k) => 10 ** k).flatMap((power) => [power - 1, power, power + 1]);
    const ids = Uint32Array.from([...Array.from({ length: 2_000 }, (_, k) => k * 37 + (k % 100)), ...edges, 4_294_967_295]).sort();
    const values = Float64Array.from(ids, (id) => id - 2_000_000_000);
    const columns: ColumnValues[] = [{ kind: 'int64', values, present: new Uint8Array(ids.length).fill(1) }];
    const expected = [...ids].map((id, row) => `${id},${values[row]}\n`).join('');
    expect(new TextDecoder().decode(csvRows(ids, columns))).toBe(expected);
  });

  it('writes an empty page as nothing', () => {
    expect(csvRows(new Uint32Array(0), [{ kind: 'string', dictionary: [], codes: new Int32Array(0) }]).length).toBe(0);
  });
});

describe('rows of a page', () => {
  it('maps members to their rows for consecutive and for scattered IDs', () => {
    const consecutive = Uint32Array.from({ length: 100 }, (_, k) => 500 + k);
    expect([...rowsIn(consecutive, Uint32Array.from([500, 501, 550, 599]))]).toEqual([0, 1, 50, 99]);
    const scattered = Uint32Array.from({ length: 1000 }, (_, k) => k * k);
    const members = [0, 1, 4, 9 * 9, 500 * 500, 998 * 998, 999 * 999];
    expect([...rowsIn(scattered, Uint32Array.from(members))]).toEqual([0, 1, 2, 9, 500, 998, 999]);
    expect([...rowsIn(scattered, new Uint32Array(0))]).toEqual([]);
  });
});
