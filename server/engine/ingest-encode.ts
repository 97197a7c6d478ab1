// A validated request as the log will hold it: its events grouped by input partition and encoded (log-codec.ts),
// every row's bytes in one buffer. Done where the request was parsed, which for HTTP is the request thread, so the
// engine thread only decides duplicates, writes the rows and decodes them when it applies them.
import { AppError } from '../errors';
import { hashIds } from './ingest-id-table';
import type { RequestIds } from './ingest-dedupe';
import { encodeEvents } from './log-codec';
import type { LoggedEvent } from './types';

/** One validated request: its events, and optionally its Idempotency-Key (with the body's hash) and event ids. */
export type IngestRequest = { events: LoggedEvent[]; ids?: (string | undefined)[]; key?: string; requestHash?: string };

/** One partition's share of a request. */
export type EncodedRow = { partition: number; count: number; bytes: Uint8Array };

/**
 * `count`: events in the request; `duplicates`: those left out because an earlier event of the same request had their
 * id (the first in the request's order is kept). `ids` when some event has one, by position in the rows' events.
 */
export type EncodedRequest = { count: number; duplicates: number; rows: EncodedRow[]; key?: string; requestHash?: string; ids?: RequestIds };

/** The events of one batch grouped by input partition (`user % partitions`), in their order within the batch. */
export function partitionEvents(events: LoggedEvent[], partitions: number): Map<number, LoggedEvent[]> {
  const groups = new Map<number, LoggedEvent[]>();
  for (const event of events) {
    const partition = event.user % partitions;
    let group = groups.get(partition);
    if (!group) groups.set(partition, (group = []));
    group.push(event);
  }
  return groups;
}

/** A batch the log format cannot hold (e.g. data nested past what JSON.stringify can recurse): bad input, a 400. */
export const cannotStore = (error: unknown) =>
  new AppError('validation_failed', `events: the batch cannot be stored: ${(error as Error).message}`, { path: 'events' });

/**
 * Groups and encodes a request. Every row's bytes are views of ONE buffer of exactly their size, so posting the
 * request to the engine thread copies them once (a Buffer of a few KB is a view of Node's shared 8 KB pool, which
 * a structured clone would copy whole, once per pool).
 */
export function encodeRequest(request: IngestRequest, partitions: number): EncodedRequest {
  const { events, ids, key, requestHash } = request;
  const groups = new Map<number, { events: LoggedEvent[]; ids: (string | undefined)[] }>();
  const seen = ids ? new Set<string>() : undefined;
  let duplicates = 0;
  for (let i = 0; i < events.length; i++) {
    const id = ids?.[i];
    if (id !== undefined) {
      if (seen!.has(id)) {
        duplicates++;
        continue;
      }
      seen!.add(id);
    }
    const partition = events[i].user % partitions;
    let group = groups.get(partition);
    if (!group) groups.set(partition, (group = { events: [], ids: [] }));
    group.events.push(events[i]);
    if (ids) group.ids.push(id);
  }
  const encoded: { partition: number; count: number; bytes: Uint8Array }[] = [];
  const rowIds: (string | undefined)[] = [];
  let size = 0;
  for (const [partition, group] of groups) {
    if (ids) for (const id of group.ids) rowIds.push(id);
    let bytes: Uint8Array;
    try {
      bytes = encodeEvents(group.events);
    } catch (error) {
      throw cannotStore(error);
    }
    size += bytes.byteLength;
    encoded.push({ partition, count: group.events.length, bytes });
  }
  const packed = new Uint8Array(size);
  let at = 0;
  const rows = encoded.map(({ partition, count, bytes }): EncodedRow => {
    packed.set(bytes, at);
    return { partition, count, bytes: packed.subarray(at, (at += bytes.byteLength)) };
  });
  return {
    count: events.length,
    duplicates,
    rows,
    ...(key === undefined ? {} : { key, requestHash }),
    // Hashed and serialized here, so the engine thread compares numbers and stores the JSON as it came (a list of
    // strings would also cost a clone per id on the way there).
    ...(ids ? { ids: { hashes: hashIds(rowIds), json: JSON.stringify(rowIds.filter((id) => id !== undefined)) } } : {}),
  };
}
