// The byte format of one EventLog row (the events of one ingested batch for one partition). JSON was a fifth of the
// engine's CPU time at full load (stringify on ingest) and ~74 bytes per event for SQLite to write; this columnar
// form is about 17 bytes per typical event and cheap to write and read.
//
//   u8 version (1) · u32 count · u8 timeMode (0: one time for all, 1: one per event) · time(s) as f64
//   u16 type count · per type: u16 byte length, its JSON string literal · u16 shape count · per shape: u16 key
//   count, per key: u16 byte length, UTF-8 · per event: u32 user, u16 type index, u16 shape (0: empty data,
//   JSON_DATA: JSON text) · per event with data: one tagged value per key of its shape, or u32 length + JSON text
//
// A shape is the key list of a data object whose values are all numbers, strings, booleans or null; anything else
// (nested values, `__proto__` keys, keys too long for a u16 length, more keys or shapes than a u16 holds, strings
// with a lone surrogate, which UTF-8 cannot carry but JSON escapes) is kept as JSON text for that event.
// Rows written before this format hold JSON text (a string on SQLite before the migration, UTF-8 bytes after it):
// decoding reads both. The user/code columns are written in this machine's byte order, which must be little-endian.
import { endianness } from 'node:os';
import type { LoggedEvent } from './types';

const VERSION = 1;
if (endianness() !== 'LE') throw new Error('The EventLog row format needs a little-endian machine');
const EMPTY_DATA = 0;
const JSON_DATA = 0xffff;
const MAX_TABLE = 0xfffe;
/** Keys are stored after a u16 byte length; longer ones (UTF-8 takes up to 3 bytes per unit) stay in JSON. */
const MAX_KEY_LENGTH = 0xffff / 3;
const MAX_KEYS = 0xffff;
const enum Tag {
  Number = 0,
  String = 1,
  True = 2,
  False = 3,
  Null = 4,
}
const JSON_TEXT_START = 0x5b; // '['

class Writer {
  buf: Buffer;
  at = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  ensure(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + bytes));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }
  u8(value: number): void {
    this.ensure(1);
    this.buf[this.at++] = value;
  }
  u16(value: number): void {
    this.ensure(2);
    this.at = this.buf.writeUInt16LE(value, this.at);
  }
  u32(value: number): void {
    this.ensure(4);
    this.at = this.buf.writeUInt32LE(value, this.at);
  }
  f64(value: number): void {
    this.ensure(8);
    this.at = this.buf.writeDoubleLE(value, this.at);
  }
  /** UTF-8 text after its byte length (u16 or u32). */
  text(value: string, wide: boolean): void {
    const lengthAt = this.at;
    this.ensure((wide ? 4 : 2) + value.length * 3);
    this.at += wide ? 4 : 2;
    const written = this.buf.write(value, this.at, 'utf8');
    if (wide) this.buf.writeUInt32LE(written, lengthAt);
    else this.buf.writeUInt16LE(written, lengthAt);
    this.at += written;
  }
}

/** Whether `value` can be a tagged value (see above). */
function isTaggable(value: unknown): boolean {
  const type = typeof value;
  // Non-finite numbers are not JSON: left to JSON.stringify, which turns them into null as before.
  if (type === 'string') return (value as string).isWellFormed();
  return type === 'boolean' || value === null || (type === 'number' && Number.isFinite(value));
}

/** The key list of `data` when it can be stored as tagged values, as one string; null otherwise. */
function shapeOf(data: Record<string, unknown>): string | null {
  let shape = '';
  let keys = 0;
  for (const key in data) {
    if (!isTaggable(data[key]) || key === '__proto__' || key.length > MAX_KEY_LENGTH || !key.isWellFormed() || ++keys > MAX_KEYS) return null;
    shape += `${key.length}:${key}`;
  }
  return shape;
}

/** Whether `data` has exactly the keys `keys`, in that order, with taggable values (the common repeat). */
function hasShape(data: Record<string, unknown>, keys: string[]): boolean {
  let i = 0;
  for (const key in data) {
    if (key !== keys[i++] || !isTaggable(data[key])) return false;
  }
  return i === keys.length;
}

/** Interns `key` in `table`, answering its index, or -1 when the table is full. */
function intern(table: Map<string, number>, key: string, first: number): number {
  let index = table.get(key);
  if (index === undefined) {
    if (table.size >= MAX_TABLE - first) return -1;
    table.set(key, (index = table.size + first));
  }
  return index;
}

/** Tables of one row: event types and data shapes, each looked up by the previous event's first. */
class Tables {
  readonly types = new Map<string, number>();
  readonly shapes = new Map<string, number>();
  readonly shapeKeys: string[][] = [];
  private lastType = '';
  private lastTypeIndex = -1;
  private lastShape = -1;

  type(type: string): number {
    if (type === this.lastType && this.lastTypeIndex >= 0) return this.lastTypeIndex;
    const index = intern(this.types, type, 0);
    if (index < 0) throw new RangeError('an EventLog row holds at most 65,534 event types');
    this.lastType = type;
    return (this.lastTypeIndex = index);
  }

  shape(data: Record<string, unknown>): number {
    if (this.lastShape > 0 && hasShape(data, this.shapeKeys[this.lastShape - 1])) return this.lastShape;
    const shape = shapeOf(data);
    if (shape === '') return EMPTY_DATA;
    const index = shape === null ? -1 : intern(this.shapes, shape, 1);
    if (index < 0) return JSON_DATA;
    if (index > this.shapeKeys.length) this.shapeKeys.push(Object.keys(data));
    return (this.lastShape = index);
  }
}

/** Writes the data of one event as tagged values, in its key order (the order of its shape's keys). */
function writeValues(out: Writer, data: Record<string, unknown>): void {
  for (const key in data) {
    const value = data[key];
    if (typeof value === 'number') {
      out.u8(Tag.Number);
      out.f64(value === 0 ? 0 : value); // -0 becomes 0, as in JSON
    } else if (typeof value === 'string') {
      out.u8(Tag.String);
      out.text(value, true);
    } else out.u8(value === true ? Tag.True : value === false ? Tag.False : Tag.Null);
  }
}

/** One pass over the events (they are read once: at full load, touching event objects is most of the cost). */
export function encodeEvents(events: LoggedEvent[]): Buffer<ArrayBuffer> {
  const count = events.length;
  const tables = new Tables();
  const columns = new Uint32Array(count * 2); // per event: user, then type index | shape << 16
  const values = new Writer(count * 12);
  const firstTime = count > 0 ? events[0].time : 0;
  let sameTime = true;
  for (let i = 0; i < count; i++) {
    const event = events[i];
    if (event.time !== firstTime) sameTime = false;
    const data = event.data;
    const shape = tables.shape(data);
    columns[2 * i] = event.user;
    columns[2 * i + 1] = tables.type(event.type) | (shape << 16);
    if (shape === JSON_DATA) values.text(JSON.stringify(data), true);
    else if (shape !== EMPTY_DATA) writeValues(values, data);
  }

  const head = new Writer(64 + (sameTime ? 0 : count * 8));
  head.u8(VERSION);
  head.u32(count);
  head.u8(sameTime ? 0 : 1);
  if (sameTime) head.f64(firstTime);
  else for (const event of events) head.f64(event.time);
  head.u16(tables.types.size);
  for (const type of tables.types.keys()) head.text(JSON.stringify(type), false);
  head.u16(tables.shapeKeys.length);
  for (const keys of tables.shapeKeys) {
    head.u16(keys.length);
    for (const key of keys) head.text(key, false);
  }
  return Buffer.concat([head.buf.subarray(0, head.at), new Uint8Array(columns.buffer), values.buf.subarray(0, values.at)]);
}

class Reader {
  at = 0;
  constructor(readonly buf: Buffer) {}
  u8(): number {
    return this.buf[this.at++];
  }
  u16(): number {
    const value = this.buf.readUInt16LE(this.at);
    this.at += 2;
    return value;
  }
  u32(): number {
    const value = this.buf.readUInt32LE(this.at);
    this.at += 4;
    return value;
  }
  f64(): number {
    const value = this.buf.readDoubleLE(this.at);
    this.at += 8;
    return value;
  }
  text(wide: boolean): string {
    const length = wide ? this.u32() : this.u16();
    const value = this.buf.toString('utf8', this.at, this.at + length);
    this.at += length;
    return value;
  }
}

function readValue(input: Reader): unknown {
  const tag = input.u8();
  switch (tag) {
    case Tag.Number:
      return input.f64();
    case Tag.String:
      return input.text(true);
    case Tag.True:
      return true;
    case Tag.False:
      return false;
    case Tag.Null:
      return null;
    default:
      throw new Error(`EventLog row: unknown value tag ${tag}`);
  }
}

/** The events of a row, in either format (see above). */
export function decodeEvents(stored: Uint8Array | string): LoggedEvent[] {
  if (typeof stored === 'string') return JSON.parse(stored) as LoggedEvent[];
  const buf = Buffer.isBuffer(stored) ? stored : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (buf[0] === JSON_TEXT_START) return JSON.parse(buf.toString('utf8')) as LoggedEvent[];
  if (buf[0] !== VERSION) throw new Error(`EventLog row: unknown format ${buf[0]}`);
  const input = new Reader(buf);
  input.at = 1;
  const count = input.u32();
  const sameTime = input.u8() === 0;
  const times = sameTime ? [input.f64()] : Array.from({ length: count }, () => input.f64());
  const types = Array.from({ length: input.u16() }, () => JSON.parse(input.text(false)) as string);
  const shapes = Array.from({ length: input.u16() }, () => Array.from({ length: input.u16() }, () => input.text(false)));
  const events = new Array<LoggedEvent>(count);
  const shapeOfEvent = new Uint16Array(count);
  for (let i = 0; i < count; i++) {
    const user = buf.readUInt32LE(input.at);
    const type = types[buf.readUInt16LE(input.at + 4)];
    shapeOfEvent[i] = buf.readUInt16LE(input.at + 6);
    input.at += 8;
    events[i] = { user, type, data: {}, time: sameTime ? times[0] : times[i] };
  }
  for (let i = 0; i < count; i++) {
    const shape = shapeOfEvent[i];
    if (shape === EMPTY_DATA) continue;
    if (shape === JSON_DATA) {
      events[i].data = JSON.parse(input.text(true)) as Record<string, unknown>;
      continue;
    }
    const data = events[i].data;
    for (const key of shapes[shape - 1]) data[key] = readValue(input);
  }
  return events;
}

/** Adds the events of a row per type to `into`, reading only the type table and column (no event is decoded). */
export function countEventTypes(stored: Uint8Array | string, into: Map<string, number>): void {
  const buf =
    typeof stored === 'string' || stored[0] === JSON_TEXT_START
      ? null
      : Buffer.isBuffer(stored)
        ? stored
        : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (!buf) {
    for (const event of decodeEvents(stored)) into.set(event.type, (into.get(event.type) ?? 0) + 1);
    return;
  }
  if (buf[0] !== VERSION) throw new Error(`EventLog row: unknown format ${buf[0]}`);
  const input = new Reader(buf);
  input.at = 1;
  const count = input.u32();
  const times = input.u8() === 0 ? 1 : count;
  input.at += times * 8;
  const types = Array.from({ length: input.u16() }, () => JSON.parse(input.text(false)) as string);
  for (let shapes = input.u16(); shapes > 0; shapes--) for (let keys = input.u16(); keys > 0; keys--) input.text(false);
  const perType = new Uint32Array(types.length);
  for (let i = 0; i < count; i++) perType[buf.readUInt16LE(input.at + 8 * i + 4)]++;
  types.forEach((type, i) => perType[i] > 0 && into.set(type, (into.get(type) ?? 0) + perType[i]));
}
