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
 * cell and no joined text: a 10M-row page of text concatenation took seconds per million rows.
 */
export function csvRows(ids: Uint32Array, columns: ColumnValues[]): Uint8Array {
  const rows = ids.length;
  const writers = columns.map(cellWriter);
  let size = rows * 11;
  for (const writer of writers) size += writer.bytes(rows);
  const out = new Uint8Array(size);
  let at = 0;
  for (let row = 0; row < rows; row++) {
    at = writeUint(out, at, ids[row]);
    for (let c = 0; c < writers.length; c++) {
      out[at++] = COMMA;
      at = writers[c].write(out, at, row);
    }
    out[at++] = NEWLINE;
  }
  return out.subarray(0, at);
}

type CellWriter = {
  /** At most the bytes the column's cells of `rows` rows take, its commas included. */
  bytes(rows: number): number;
  /** Writes row's cell at `at`; returns the position after it. */
  write(out: Uint8Array, at: number, row: number): number;
};

/** More than the longest text of a double ("-1.2345678901234567e-300"), a whole number up to 2^53 or an ISO time ("+275760-09-13T00:00:00.000Z"). */
const NUMBER_BYTES = 32;

function cellWriter(column: ColumnValues): CellWriter {
  if (column.kind === 'string') {
    const { codes } = column;
    const encoded = column.dictionary.map((text) => encoder.encode(csvField(text)));
    return {
      bytes(rows) {
        let total = rows;
        for (let row = 0; row < rows; row++) if (codes[row] >= 0) total += encoded[codes[row]].length;
        return total;
      },
      write(out, at, row) {
        const code = codes[row];
        if (code < 0) return at;
        const text = encoded[code];
        if (text.length === 1) out[at] = text[0];
        else out.set(text, at);
        return at + text.length;
      },
    };
  }
  const { values, present } = column;
  const bytes = (rows: number) => rows * (NUMBER_BYTES + 1);
  switch (column.kind) {
    case 'boolean': {
      const [yes, no] = [encoder.encode('true'), encoder.encode('false')];
      return { bytes, write: (out, at, row) => (present[row] ? writeBytes(out, at, values[row] ? yes : no) : at) };
    }
    case 'timestamp':
      return { bytes, write: (out, at, row) => (present[row] ? writeAscii(out, at, new Date(values[row]).toISOString()) : at) };
    case 'int64':
      return { bytes, write: (out, at, row) => (present[row] ? writeInteger(out, at, values[row]) : at) };
    default:
      return {
        bytes,
        write: (out, at, row) => {
          if (!present[row]) return at;
          const value = values[row];
          return Number.isSafeInteger(value) ? writeInteger(out, at, value) : writeAscii(out, at, String(value));
        },
      };
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

function writeUint(out: Uint8Array, at: number, value: number): number {
  const end = at + digitCount(value);
  let cursor = end;
  do {
    const next = Math.floor(value / 10);
    out[--cursor] = 48 + value - next * 10;
    value = next;
  } while (value > 0);
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
