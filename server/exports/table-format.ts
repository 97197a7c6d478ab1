// A page of an export with columns, as CSV text or as an Arrow record batch (IPC stream bytes) for the Parquet
// writer: the user ID first, then each profile column. Pure functions over typed arrays, run in the export table
// thread (table-thread.ts).
import * as arrow from 'apache-arrow';
import type { ColumnSpec, ColumnValues, NumberColumn } from '../profiles/columns';

/** `user` and the columns' names as a CSV header row. */
export function csvHeader(columns: ColumnSpec[]): string {
  return `${['user', ...columns.map((column) => column.name)].map(csvField).join(',')}\n`;
}

/** RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled. */
function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const COMMA = 44;
const NEWLINE = 10;
const MINUS = 45;
const encoder = new TextEncoder();

/**
 * One line per user: the ID, then each column's value (empty where the user has none), written as bytes into one
 * buffer per page: digits by arithmetic, strings as their dictionary's pre-encoded (and quoted) bytes. No string per
 * cell and no joined text (string concatenation took 2.8-5.8 s per million rows of 3 columns); the common cells
 * (strings, whole numbers) are written inline, the rest through a writer of their own.
 */
export function csvRows(ids: Uint32Array, columns: ColumnValues[]): Uint8Array {
  const rows = ids.length;
  const cells = columns.map((column) => new CellColumn(column));
  let size = rows * 11;
  for (const cell of cells) size += cell.bytes(rows);
  const out = new Uint8Array(size);
  let at = 0;
  for (let row = 0; row < rows; row++) {
    at = writeUint(out, at, ids[row]);
    for (let c = 0; c < cells.length; c++) {
      out[at++] = COMMA;
      const cell = cells[c];
      if (cell.kind === STRING) {
        const code = cell.codes[row];
        if (code < 0) continue;
        const text = cell.encoded[code];
        for (let k = 0; k < text.length; k++) out[at + k] = text[k];
        at += text.length;
      } else if (cell.present[row] === 1) at = cell.kind === INTEGER ? writeInteger(out, at, cell.values[row]) : cell.write(out, at, row);
    }
    out[at++] = NEWLINE;
  }
  return out.subarray(0, at);
}

const STRING = 0;
const INTEGER = 1;
const OTHER = 2;

/** More than the longest text of a double ("-1.2345678901234567e-300"), a whole number up to 2^53 or an ISO time ("+275760-09-13T00:00:00.000Z"). */
const NUMBER_BYTES = 32;
const NO_CODES = new Int32Array(0);
const NO_VALUES = new Float64Array(0);
const NO_FLAGS = new Uint8Array(0);

/** A column as csvRows reads it: one shape for every kind, so the row loop's property reads stay monomorphic. */
class CellColumn {
  readonly kind: number;
  readonly codes: Int32Array = NO_CODES;
  readonly encoded: Uint8Array[] = [];
  readonly values: Float64Array = NO_VALUES;
  readonly present: Uint8Array = NO_FLAGS;
  /** Writes a cell of a kind the row loop does not write inline (doubles, booleans, times); returns the position after it. */
  readonly write: (out: Uint8Array, at: number, row: number) => number = (_out, at) => at;

  constructor(column: ColumnValues) {
    if (column.kind === 'string') {
      this.kind = STRING;
      this.codes = column.codes;
      this.encoded = column.dictionary.map((text) => encoder.encode(csvField(text)));
      return;
    }
    const { values, present } = column;
    this.values = values;
    this.present = present;
    this.kind = column.kind === 'int64' ? INTEGER : OTHER;
    if (column.kind === 'boolean') {
      const [yes, no] = [encoder.encode('true'), encoder.encode('false')];
      this.write = (out, at, row) => writeBytes(out, at, values[row] ? yes : no);
    } else if (column.kind === 'timestamp') this.write = (out, at, row) => writeAscii(out, at, new Date(values[row]).toISOString());
    else if (column.kind === 'double') {
      this.write = (out, at, row) => {
        const value = values[row];
        return Number.isSafeInteger(value) ? writeInteger(out, at, value) : writeAscii(out, at, String(value));
      };
    }
  }

  /** At most the bytes this column's cells of `rows` rows take, commas included. */
  bytes(rows: number): number {
    if (this.kind !== STRING) return rows * (NUMBER_BYTES + 1);
    const lengths = this.encoded.map((text) => text.length);
    let longest = 0;
    for (const length of lengths) longest = Math.max(longest, length);
    // Short values (the common case): a bound without a pass over the rows.
    if (longest <= 64) return rows * (longest + 1);
    let total = rows;
    for (let row = 0; row < rows; row++) if (this.codes[row] >= 0) total += lengths[this.codes[row]];
    return total;
  }
}

function writeBytes(out: Uint8Array, at: number, bytes: Uint8Array): number {
  out.set(bytes, at);
  return at + bytes.length;
}

/** Text known to be ASCII (numbers, ISO times). */
function writeAscii(out: Uint8Array, at: number, text: string): number {
  for (let k = 0; k < text.length; k++) out[at + k] = text.charCodeAt(k);
  return at + text.length;
}

/** A whole number with |n| ≤ 2^53 as decimal digits. */
function writeInteger(out: Uint8Array, at: number, n: number): number {
  if (n < 0) {
    out[at++] = MINUS;
    n = -n;
  }
  if (n < 4294967296) return writeUint(out, at, n);
  const high = Math.floor(n / 1e9);
  at = writeUint(out, at, high);
  // The low nine digits, zero-padded.
  let low = n - high * 1e9;
  for (let k = at + 8; k >= at; k--) {
    const next = Math.floor(low / 10);
    out[k] = 48 + low - next * 10;
    low = next;
  }
  return at + 9;
}

/** "00" … "99" as ASCII digit pairs: two digits a division. */
const DIGIT_PAIRS = Uint8Array.from({ length: 200 }, (_, k) => 48 + (k % 2 === 0 ? Math.floor(k / 20) : (k >> 1) % 10));

/** A whole number 0 ≤ value < 2^32. */
function writeUint(out: Uint8Array, at: number, value: number): number {
  const end = at + digitCount(value);
  let cursor = end;
  while (value >= 100) {
    const next = (value / 100) >>> 0;
    const pair = (value - next * 100) << 1;
    out[--cursor] = DIGIT_PAIRS[pair + 1];
    out[--cursor] = DIGIT_PAIRS[pair];
    value = next;
  }
  if (value >= 10) {
    out[--cursor] = DIGIT_PAIRS[(value << 1) + 1];
    out[--cursor] = DIGIT_PAIRS[value << 1];
  } else out[--cursor] = 48 + value;
  return end;
}

function digitCount(value: number): number {
  if (value < 100000) return value < 10 ? 1 : value < 100 ? 2 : value < 1000 ? 3 : value < 10000 ? 4 : 5;
  return value < 1000000 ? 6 : value < 10000000 ? 7 : value < 100000000 ? 8 : value < 1000000000 ? 9 : 10;
}

/** The Arrow types of an export's columns; made once per export so every batch's dictionaries share their ids. */
export function arrowTypes(columns: ColumnSpec[]): arrow.DataType[] {
  return columns.map((column) => {
    switch (column.kind) {
      case 'int64':
        return new arrow.Int64();
      case 'double':
        return new arrow.Float64();
      case 'boolean':
        return new arrow.Bool();
      case 'timestamp':
        return new arrow.TimestampMillisecond('UTC');
      case 'string':
        return new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32());
    }
  });
}

/** A page as one Arrow record batch in IPC stream bytes: `user` (int64) and the columns, nullable. */
export function arrowBatch(columns: ColumnSpec[], types: arrow.DataType[], ids: Uint32Array, values: ColumnValues[]): Uint8Array {
  const rows = ids.length;
  const user = new BigInt64Array(rows);
  const words = new Uint32Array(user.buffer);
  for (let row = 0; row < rows; row++) words[2 * row] = ids[row];
  const vectors: Record<string, arrow.Vector> = { user: arrow.makeVector(arrow.makeData({ type: new arrow.Int64(), length: rows, data: user })) };
  columns.forEach((column, k) => {
    vectors[column.name] = arrow.makeVector(columnData(types[k], values[k], rows));
  });
  return arrow.tableToIPC(new arrow.Table(vectors), 'stream');
}

function columnData(type: arrow.DataType, column: ColumnValues, rows: number): arrow.Data {
  if (column.kind === 'string') {
    const valid = new Uint8Array(Math.ceil(rows / 8));
    const codes = new Int32Array(rows);
    let nulls = 0;
    for (let row = 0; row < rows; row++) {
      const code = column.codes[row];
      if (code < 0) nulls++;
      else {
        codes[row] = code;
        valid[row >> 3] |= 1 << (row & 7);
      }
    }
    const dictionary = arrow.vectorFromArray(column.dictionary, new arrow.Utf8());
    return arrow.makeData({
      type: type as arrow.Dictionary<arrow.Utf8, arrow.Int32>,
      length: rows,
      data: codes,
      nullBitmap: valid,
      nullCount: nulls,
      dictionary,
    });
  }
  const { valid, nulls } = validity(column, rows);
  switch (column.kind) {
    case 'double':
      return arrow.makeData({ type: type as arrow.Float64, length: rows, data: column.values, nullBitmap: valid, nullCount: nulls });
    case 'boolean': {
      const bits = new Uint8Array(Math.ceil(rows / 8));
      for (let row = 0; row < rows; row++) if (column.values[row]) bits[row >> 3] |= 1 << (row & 7);
      return arrow.makeData({ type: type as arrow.Bool, length: rows, data: bits, nullBitmap: valid, nullCount: nulls });
    }
    case 'int64':
      return arrow.makeData({ type: type as arrow.Int64, length: rows, data: toInt64(column.values), nullBitmap: valid, nullCount: nulls });
    case 'timestamp':
      return arrow.makeData({ type: type as arrow.TimestampMillisecond, length: rows, data: toInt64(column.values), nullBitmap: valid, nullCount: nulls });
  }
}

function validity(column: NumberColumn, rows: number): { valid: Uint8Array; nulls: number } {
  const valid = new Uint8Array(Math.ceil(rows / 8));
  let nulls = 0;
  for (let row = 0; row < rows; row++) {
    if (column.present[row]) valid[row >> 3] |= 1 << (row & 7);
    else nulls++;
  }
  return { valid, nulls };
}

const TWO_32 = 2 ** 32;

/** Whole numbers (|n| < 2^53) as int64 words, written as two 32-bit halves: no BigInt per value. */
function toInt64(values: Float64Array): BigInt64Array {
  const out = new BigInt64Array(values.length);
  const words = new Int32Array(out.buffer);
  for (let row = 0; row < values.length; row++) {
    const value = values[row];
    const high = Math.floor(value / TWO_32);
    words[2 * row] = value - high * TWO_32; // low word: its bits, stored through Int32's wrap-around
    words[2 * row + 1] = high;
  }
  return out;
}
