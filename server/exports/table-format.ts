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

/** One line per user: the ID, then each column's value (empty where the user has none). */
export function csvRows(ids: Uint32Array, columns: ColumnValues[]): string {
  const cells = columns.map(cellsOf);
  let text = '';
  for (let row = 0; row < ids.length; row++) {
    text += ids[row];
    for (const cell of cells) text += `,${cell(row)}`;
    text += '\n';
  }
  return text;
}

function cellsOf(column: ColumnValues): (row: number) => string {
  if (column.kind === 'string') {
    const quoted = column.dictionary.map(csvField);
    return (row) => (column.codes[row] < 0 ? '' : quoted[column.codes[row]]);
  }
  const { values, present } = column;
  switch (column.kind) {
    case 'boolean':
      return (row) => (present[row] ? (values[row] ? 'true' : 'false') : '');
    case 'timestamp':
      return (row) => (present[row] ? new Date(values[row]).toISOString() : '');
    default:
      return (row) => (present[row] ? String(values[row]) : '');
  }
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
