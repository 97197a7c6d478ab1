// Bulk profile import: a streamed NDJSON or CSV body, merged into stored profiles with the upsert route's JSON Merge
// Patch semantics, committed in chunks of IMPORT_CHUNK_LINES lines. Each chunk is one transaction and is applied to
// the profile index only after it commits (server/profiles/index-store.ts), so data and index agree after any
// failure: a bad line refuses its whole chunk (the error names the line and how many lines were committed before
// it), and a process killed mid-import leaves committed chunks whose write counter no longer matches the index
// snapshot, so the next load rebuilds the index from the rows. Importing the same file again is harmless: merging
// the same attributes twice gives the same profiles.
import { z } from 'zod';
import { RoaringBitmap32 } from '../crowd/bitmap';
import { AppError } from '../errors';
import { upsertProfileRows } from '../storage/profile-rows';
import { notifyProfilesChanged } from './changes';
import { CsvReader, lineBatches, parseColumnTypes, parseNdjsonLine, splitCsv, badLine, type ImportItem } from './import-parse';
import { tenantLimits, type TenantLimits } from '../limits/limits';
import { AttributeBudget } from './attribute-budget';
import { nextTurnOfTheLoop, type NextTurn } from '../clock';
import { duringImport, profileIndex, profileWrite } from './index-store';
import type { Attributes, ProfileChange, ProfileIndex } from './index-tenant';
import { MAX_PROFILE_BYTES, mergeAttributes } from './profiles';
import type { Database } from '../storage/database';
import { retryTransient } from '../storage/transient';

/**
 * Lines per committed chunk: one transaction each. A chunk's write (one synchronous SQLite transaction) and its
 * index update each run without yielding, so chunks are kept small enough for other requests to be answered between
 * them; 20,000-line chunks held the event loop for up to a second on a loaded machine.
 */
export const IMPORT_CHUNK_LINES = 5_000;
/** Lines parsed, or profiles serialized, between turns of the event loop. */
const PARSE_SLICE = 1_000;

export type ImportFormat = 'ndjson' | 'csv';

/** The import's query: only `types` (CSV column types); any other parameter is a 400 naming it. */
export const ImportQuery = z.strictObject({ types: z.string().max(4096).optional() });
export type ImportResult = { lines: number; users: number; created: number; chunks: number; ms: number };

/** The format of a Content-Type, or an unsupported_media_type error. */
export function importFormat(contentType: string | null): ImportFormat {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-ndjson' || type === 'application/ndjson' || type === 'application/jsonl') return 'ndjson';
  if (type === 'text/csv') return 'csv';
  throw new AppError(
    'unsupported_media_type',
    `Send profiles as application/x-ndjson (one {"user", "attributes"} object a line) or text/csv with a header row; got ${contentType ?? 'no Content-Type'}`,
  );
}

export async function importProfiles(
  database: Database,
  tenantId: string,
  body: ReadableStream<Uint8Array> | null,
  format: ImportFormat,
  columnTypes: string | null = null,
  turn: NextTurn = nextTurnOfTheLoop,
): Promise<ImportResult> {
  const started = performance.now();
  const types = parseColumnTypes(columnTypes);
  if (format === 'ndjson' && Object.keys(types).length > 0) throw new AppError('bad_request', 'types applies to CSV imports only');
  if (!body) throw new AppError('bad_request', 'The import body is empty');
  // Reads and chunk commits go again after a transient storage error: the body cannot be sent again from here.
  const limits = await retryTransient(() => tenantLimits(database, tenantId));
  // Checked as lines are read, so a file past the attribute limit stops at its first such line, before its chunk is
  // held in memory; each chunk is checked again against the index when it is written (commitChunk).
  const budget = new AttributeBudget(await retryTransient(() => profileIndex(database, tenantId)), limits.maxProfileAttributes);
  const result: ImportResult = { lines: 0, users: 0, created: 0, chunks: 0, ms: 0 };
  let csv: CsvReader | null = null;
  let chunk: ImportItem[] = [];
  let lastLine = 0;
  // The chunk being committed while the next one is read (PostgreSQL writes it meanwhile): at most one, in order.
  let committing: Promise<void> = Promise.resolve();
  const commit = async () => {
    const items = chunk;
    chunk = [];
    await committing; // a failed chunk ends the import before the next one is written
    committing = retryTransient(() => commitChunk(database, tenantId, items, limits, turn)).then((committed) => {
      result.lines += items.length;
      result.users += committed.users;
      result.created += committed.created;
      result.chunks++;
    });
    committing.catch(() => undefined); // its failure is thrown where it is awaited: the next commit or the end
  };
  await duringImport(database, tenantId, async () => {
    try {
      await readAndCommit();
    } catch (error) {
      await committing.catch(() => undefined); // so the counts below are what was committed
      if (error instanceof AppError && (error.code === 'validation_failed' || error.code === 'too_many_attributes')) {
        const details = { ...(error.details as object), committedLines: result.lines, committedChunks: result.chunks };
        throw new AppError(
          error.code,
          `${error.message}; ${result.lines} lines before it were committed (chunks of ${IMPORT_CHUNK_LINES}), the rest of the import was not`,
          details,
        );
      }
      throw error;
    }
  });
  if (format === 'csv' && !csv) throw badLine(lastLine + 1, 'the CSV has no header row');
  result.ms = Math.round(performance.now() - started);
  return result;

  async function readAndCommit(): Promise<void> {
    for await (const { lines, numbers } of lineBatches(body!)) {
      for (let i = 0; i < lines.length; i++) {
        const line = numbers[i];
        lastLine = line;
        if (format === 'csv' && !csv) {
          csv = new CsvReader(splitCsv(lines[i], line), types, line);
          continue;
        }
        const item = csv ? csv.read(lines[i], line) : parseNdjsonLine(lines[i], line);
        budget.admit(item.attributes, `line ${line}, user ${item.user}`);
        chunk.push(item);
        if (chunk.length >= IMPORT_CHUNK_LINES) await commit();
        else if (chunk.length % PARSE_SLICE === 0) await turn();
      }
    }
    if (chunk.length > 0) await commit();
    await committing;
  }
}

/** One chunk in one transaction; the index learns of it after the commit. */
async function commitChunk(
  database: Database,
  tenantId: string,
  items: ImportItem[],
  limits: TenantLimits,
  turn: NextTurn,
): Promise<{ users: number; created: number }> {
  const users: number[] = [];
  const summary = await profileWrite(
    database,
    tenantId,
    async (index) => {
      // Again here, where the index is the database: another write may have added attributes since the lines were read.
      const budget = new AttributeBudget(index, limits.maxProfileAttributes);
      items.forEach((item, i) => budget.admit(item.attributes, `item ${i + 1} of the chunk, user ${item.user}`));
      index.setIndexedValueLimit(limits.maxIndexedValuesPerAttribute);
      const before = existingProfiles(index, items);
      const after = new Map<number, Attributes>();
      for (const { user, attributes } of items) {
        const previous = after.get(user) ?? before.get(user);
        if (!after.has(user)) users.push(user);
        // A new profile whose patch removes nothing is the patch itself: no copy (the first import of a file).
        after.set(user, previous === undefined && isPlainPatch(attributes) ? attributes : mergeAttributes(previous ?? {}, attributes));
      }
      const rows: Array<[number, string]> = [];
      for (const user of users) {
        const text = JSON.stringify(after.get(user));
        // A UTF-8 byte is at most 3 per UTF-16 unit: short texts need no count.
        if (text.length * 3 > MAX_PROFILE_BYTES && Buffer.byteLength(text) > MAX_PROFILE_BYTES) {
          const line = items.findIndex((item) => item.user === user);
          throw new AppError('validation_failed', `the profile of user ${user} would be ${Buffer.byteLength(text)} bytes; the limit is ${MAX_PROFILE_BYTES}`, {
            user,
            itemInChunk: line + 1,
          });
        }
        rows.push([user, text]);
        // Other requests are answered between slices; the write and the index update that follow are one step each.
        if (rows.length % PARSE_SLICE === 0) await turn();
      }
      const seq = await upsertProfileRows(database, tenantId, rows);
      const changes: ProfileChange[] = users.map((user) => ({ user, before: before.get(user), after: after.get(user) }));
      return { result: { users: users.length, created: users.length - before.size }, changes, seq, afterTexts: rows.map(([, text]) => text) };
    },
    turn,
  );
  notifyProfilesChanged(database, tenantId, users);
  return summary;
}

/**
 * Whether merging `patch` into nothing gives `patch` back: no null (which merging removes) in it or its nested
 * objects, and no "__proto__" key (which merging does not copy as an own key).
 */
function isPlainPatch(patch: Attributes): boolean {
  for (const key in patch) {
    const value = patch[key];
    if (value === null || key === '__proto__') return false;
    if (typeof value === 'object' && !Array.isArray(value) && !isPlainPatch(value as Attributes)) return false;
  }
  return true;
}

/**
 * The current profiles of the chunk's users that have one, read back from the index (which is the database at
 * its write counter while this write holds the tenant's turn): a first import reads nothing at all.
 */
function existingProfiles(index: ProfileIndex, items: ImportItem[]): Map<number, Attributes> {
  const ids = new Uint32Array(items.length);
  for (let i = 0; i < items.length; i++) ids[i] = items[i].user;
  return index.materialize(RoaringBitmap32.from(ids));
}
