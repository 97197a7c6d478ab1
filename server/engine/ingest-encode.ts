// A validated request as the log will hold it: its events grouped by input partition and encoded (log-codec.ts),
// every row's bytes in one buffer. Done where the request was parsed, which for HTTP is the request thread, so the
// engine thread only decides duplicates, writes the rows and decodes them when it applies them.
import { AppError } from '../errors';
import { hashIds, ID_HASH_WORDS, IdTable } from './ingest-id-table';
import type { RequestIds } from './ingest-dedupe';
import { encodeEvents } from './log-codec';
import { partitionOf, type UserPartitioning } from './partitioning';
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

/** The events of one batch grouped by input partition (partitioning.ts), in their order within the batch. */
export function partitionEvents(events: LoggedEvent[], partitioning: UserPartitioning): Map<number, LoggedEvent[]> {
  const groups = new Map<number, LoggedEvent[]>();
  for (const event of events) {
    const partition = partitionOf(event.user, partitioning);
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
export function encodeRequest(request: IngestRequest, partitioning: UserPartitioning): EncodedRequest {
  const { events, ids, key, requestHash } = request;
  // Every id hashed once, in request order: the same words find repeats within the request and go to the engine.
  const hashes = ids && hashIds(ids);
  const repeated = ids && repeatsWithin(ids, hashes!);
  const groups = new Map<number, { events: LoggedEvent[]; positions: number[] }>();
  let duplicates = 0;
  for (let i = 0; i < events.length; i++) {
    if (repeated?.[i]) {
      duplicates++;
      continue;
    }
    const partition = partitionOf(events[i].user, partitioning);
    let group = groups.get(partition);
    if (!group) groups.set(partition, (group = { events: [], positions: [] }));
    group.events.push(events[i]);
    if (ids) group.positions.push(i);
  }
  const encoded: { partition: number; count: number; bytes: Uint8Array }[] = [];
  let size = 0;
  for (const [partition, group] of groups) {
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
    ...(ids
      ? {
          ids: hashesInRowOrder(
            hashes!,
            [...groups.values()].map((g) => g.positions),
          ),
        }
      : {}),
  };
}

/**
 * The ids' hashes as the rows hold their events (copied, not computed again): the engine thread compares and stores
 * these, never the strings (a list of strings would also cost a clone per id on the way there).
 */
function hashesInRowOrder(hashes: Uint32Array, positionsByRow: number[][]): RequestIds {
  let kept = 0;
  for (const positions of positionsByRow) kept += positions.length;
  const rowHashes = new Uint32Array(ID_HASH_WORDS * kept);
  let at = 0;
  for (const positions of positionsByRow) {
    for (const i of positions) for (let word = ID_HASH_WORDS * i; word < ID_HASH_WORDS * (i + 1); word++) rowHashes[at++] = hashes[word];
  }
  return { hashes: rowHashes };
}

/**
 * Marks each event whose id an earlier event of the request has (the first is kept); undefined when none repeats.
 * The dedupe window's table over the hashes, strings compared only when hashes are equal: a Set of the strings cost
 * twice as much (V8 hashes each string again).
 */
function repeatsWithin(ids: readonly (string | undefined)[], hashes: Uint32Array): Uint8Array | undefined {
  const seen = new IdTable((_, position, __, otherPosition) => ids[position] === ids[otherPosition], ids.length);
  let repeated: Uint8Array | undefined;
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== undefined && !seen.claim(hashes[ID_HASH_WORDS * i], hashes[ID_HASH_WORDS * i + 1], 0, i)) (repeated ??= new Uint8Array(ids.length))[i] = 1;
  }
  return repeated;
}
