// Profile attributes as columns for a page of users (exports with `columns=`): read from the profile index with one
// AND per distinct string, per bit slice of a number, per boolean bitmap, never a profile object per user. A page
// is the sorted IDs of up to a few hundred thousand users; each value's holders are placed in the page's rows by a
// galloping search over those IDs. Runs where the index is (the engine thread), one page per call, so a 10M-user
// export is many short turns of that thread rather than one long one.
import roaring, { type ReadonlyRoaringBitmap32 } from 'roaring';
import { badRequest } from '../errors';
import type { Database } from '../storage/database';
import type { BitSlicedIndex } from './index-bsi';
import type { FieldIndex } from './index-field';
import { profileIndex } from './index-store';
import type { ProfileIndex } from './index-tenant';

const { RoaringBitmap32: Bitmap } = roaring;

/**
 * How a column is typed in an export: `int64` (every value a whole number), `double` (numbers), `boolean`,
 * `timestamp` (every value a string CEL reads as a timestamp: epoch ms), `string` (anything else, as its text).
 */
export type ColumnKind = 'int64' | 'double' | 'boolean' | 'timestamp' | 'string';
export type ColumnSpec = { name: string; kind: ColumnKind };

/** One column of a page: numbers (int64, double, timestamp ms) or booleans (0/1) with a presence flag per row, or strings by dictionary code (-1: none). */
export type NumberColumn = { kind: Exclude<ColumnKind, 'string'>; values: Float64Array; present: Uint8Array };
export type TextColumn = { kind: 'string'; dictionary: string[]; codes: Int32Array };
export type ColumnValues = NumberColumn | TextColumn;

/** The columns of `names` (attribute paths, dotted for nested keys), typed by what the index holds; an unknown path is a 400 naming it. */
export async function describeProfileColumns(database: Database, tenantId: string, names: string[]): Promise<ColumnSpec[]> {
  const index = await profileIndex(database, tenantId);
  const fields = fieldsByName(index);
  const unknown = names.filter((name) => !fields.has(name));
  if (unknown.length > 0) {
    throw badRequest(
      `columns: unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `"${name}"`).join(', ')}: no profile of the tenant has that attribute`,
      {
        path: 'columns',
        unknown,
      },
    );
  }
  return names.map((name) => ({ name, kind: kindOf(fields.get(name)!) }));
}

/** The values of `columns` for the users `ids` (ascending), row k for ids[k]. */
export async function readProfileColumns(database: Database, tenantId: string, columns: ColumnSpec[], ids: Uint32Array): Promise<ColumnValues[]> {
  return readIndexColumns(await profileIndex(database, tenantId), columns, ids);
}

/** The same read on an index in hand (probes and tests). */
export function readIndexColumns(index: ProfileIndex, columns: ColumnSpec[], ids: Uint32Array): ColumnValues[] {
  const fields = fieldsByName(index);
  const page = Bitmap.from(ids);
  try {
    return columns.map((column) => {
      const field = fields.get(column.name);
      if (!field)
        return column.kind === 'string'
          ? { kind: 'string', dictionary: [], codes: new Int32Array(ids.length).fill(-1) }
          : emptyNumbers(column.kind, ids.length);
      const here = Bitmap.and(page, field.presence);
      try {
        return readColumn(index, column, field, ids, here);
      } finally {
        here.dispose();
      }
    });
  } finally {
    page.dispose();
  }
}

function fieldsByName(index: ProfileIndex): Map<string, FieldIndex & { segments: string[] }> {
  const byName = new Map<string, FieldIndex & { segments: string[] }>();
  for (const { segments, field } of index.paths()) {
    const name = segments.join('.');
    if (!byName.has(name)) byName.set(name, Object.assign(field, { segments }));
  }
  return byName;
}

function kindOf(field: FieldIndex): ColumnKind {
  const oddNumbers = [...field.others.values()].filter((value) => typeof value === 'number');
  const numbers = field.numbers.exists.size + oddNumbers.length;
  const booleans = field.trues.size + field.falses.size;
  const total = field.presence.size;
  if (total > 0 && numbers === total) return field.scale === 0 && oddNumbers.every((n) => Number.isSafeInteger(n)) ? 'int64' : 'double';
  if (total > 0 && booleans === total) return 'boolean';
  const strings = field.highCardinality ? field.highCardinality.size : [...field.strings.values()].reduce((sum, users) => sum + users.size, 0);
  if (total > 0 && strings === total && field.times.exists.size === total) return 'timestamp';
  return 'string';
}

function emptyNumbers(kind: Exclude<ColumnKind, 'string'>, rows: number): NumberColumn {
  return { kind, values: new Float64Array(rows), present: new Uint8Array(rows) };
}

function readColumn(
  index: ProfileIndex,
  column: ColumnSpec,
  field: FieldIndex & { segments: string[] },
  ids: Uint32Array,
  here: ReadonlyRoaringBitmap32,
): ColumnValues {
  switch (column.kind) {
    case 'int64':
    case 'double': {
      const out = emptyNumbers(column.kind, ids.length);
      readSliced(field.numbers, ids, here, out.values, out.present, 10 ** field.scale);
      if (field.others.size > 0) {
        forEachRow(ids, here.toUint32Array(), (row, user) => {
          const value = field.others.get(user);
          if (typeof value === 'number') {
            out.values[row] = value;
            out.present[row] = 1;
          }
        });
      }
      return out;
    }
    case 'timestamp': {
      const out = emptyNumbers('timestamp', ids.length);
      readSliced(field.times, ids, here, out.values, out.present, 1);
      return out;
    }
    case 'boolean': {
      const out = emptyNumbers('boolean', ids.length);
      for (const [holders, value] of [
        [field.trues, 1],
        [field.falses, 0],
      ] as const) {
        const rows = rowsIn(ids, Bitmap.and(here, holders).toUint32Array());
        for (let k = 0; k < rows.length; k++) {
          out.values[rows[k]] = value;
          out.present[rows[k]] = 1;
        }
      }
      return out;
    }
    case 'string':
      return readText(index, field, ids, here);
  }
}

/** A bit-sliced index's values at the rows of `here`: one AND per bit slice, the weights added in place. */
function readSliced(bsi: BitSlicedIndex, ids: Uint32Array, here: ReadonlyRoaringBitmap32, values: Float64Array, present: Uint8Array, unit: number): void {
  const holders = Bitmap.and(here, bsi.exists);
  if (holders.isEmpty) return;
  const rows = rowsIn(ids, holders.toUint32Array());
  for (let k = 0; k < rows.length; k++) present[rows[k]] = 1;
  for (let i = 0; i < bsi.depth; i++) {
    const weight = 2 ** i;
    const set = rowsIn(ids, Bitmap.and(holders, bsi.slices[i]).toUint32Array());
    for (let k = 0; k < set.length; k++) values[set[k]] += weight;
  }
  const negative = rowsIn(ids, Bitmap.and(holders, bsi.negative).toUint32Array());
  for (let k = 0; k < negative.length; k++) values[negative[k]] = -values[negative[k]];
  if (unit !== 1) for (let k = 0; k < rows.length; k++) values[rows[k]] /= unit;
  holders.dispose();
}

/** A column of any values as text: strings as they are, numbers and booleans as JSON writes them, lists and objects as JSON. */
function readText(index: ProfileIndex, field: FieldIndex & { segments: string[] }, ids: Uint32Array, here: ReadonlyRoaringBitmap32): TextColumn {
  const codes = new Int32Array(ids.length).fill(-1);
  const dictionary: string[] = [];
  const codeOf = new Map<string, number>();
  const codeFor = (text: string) => {
    let code = codeOf.get(text);
    if (code === undefined) {
      code = dictionary.push(text) - 1;
      codeOf.set(text, code);
    }
    return code;
  };
  const put = (row: number, text: string) => {
    codes[row] = codeFor(text);
  };
  /** One value's holders among the page: its code written at their rows (no lookup per row). */
  const putAll = (holders: ReadonlyRoaringBitmap32, text: string) => {
    const rows = rowsIn(ids, Bitmap.and(here, holders).toUint32Array());
    if (rows.length === 0) return;
    const code = codeFor(text);
    for (let k = 0; k < rows.length; k++) codes[rows[k]] = code;
  };
  if (field.highCardinality) {
    const values = field.highCardinality;
    forEachRow(ids, here.toUint32Array(), (row, user) => {
      const value = values.get(user);
      if (value !== undefined) put(row, value);
    });
  } else {
    for (const [value, holders] of field.strings) if (here.intersects(holders)) putAll(holders, value);
  }
  for (const [holders, text] of [
    [field.trues, 'true'],
    [field.falses, 'false'],
  ] as const) {
    if (!holders.isEmpty) putAll(holders, text);
  }
  if (!field.numbers.exists.isEmpty) {
    const values = new Float64Array(ids.length);
    const present = new Uint8Array(ids.length);
    readSliced(field.numbers, ids, here, values, present, 10 ** field.scale);
    for (let row = 0; row < ids.length; row++) if (present[row]) put(row, String(values[row]));
  }
  // Lists, odd numbers and objects: few users as a rule, read back as values and written as JSON.
  const rest = Bitmap.and(here, field.objects);
  if (field.others.size > 0) for (const user of here.toUint32Array()) if (field.others.has(user)) rest.add(user);
  if (!rest.isEmpty) {
    const profiles = index.materialize(rest, [field.segments[0]]);
    forEachRow(ids, rest.toUint32Array(), (row, user) => {
      const value = field.segments.reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], profiles.get(user));
      if (value !== undefined) put(row, typeof value === 'string' ? value : JSON.stringify(value));
    });
  }
  rest.dispose();
  return { kind: 'string', dictionary, codes };
}

/**
 * The rows in `ids` (ascending) of `members` (ascending, all among `ids`), written over `members` and returned. A page
 * of consecutive IDs (a dense crowd's) maps by subtraction; otherwise a galloping search from the last row found, so a
 * sparse value costs a few probes per holder and a dense one a step. No call per member: a page is 10^5 rows and a
 * column reads a dozen bitmaps of them.
 */
export function rowsIn(ids: Uint32Array, members: Uint32Array): Uint32Array {
  const last = ids.length - 1;
  if (last < 0 || members.length === 0) return members;
  const base = ids[0];
  if (ids[last] - base === last) {
    for (let m = 0; m < members.length; m++) members[m] -= base;
    return members;
  }
  let at = 0;
  for (let m = 0; m < members.length; m++) {
    const user = members[m];
    let step = 1;
    let high = at;
    while (high < last && ids[high] < user) {
      at = high;
      high += step;
      step *= 2;
    }
    let low = at;
    if (high > last) high = last;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (ids[middle] < user) low = middle + 1;
      else high = middle;
    }
    at = low;
    members[m] = low;
  }
  return members;
}

/** Calls `visit(row, user)` for each of `members` (ascending, all among `ids`, ascending) with its row in `ids` (rowsIn). */
export function forEachRow(ids: Uint32Array, members: Uint32Array, visit: (row: number, user: number) => void): void {
  const users = members.slice(); // rowsIn writes the rows over the array it is given
  const rows = rowsIn(ids, members);
  for (let m = 0; m < rows.length; m++) visit(rows[m], users[m]);
}
