import { z } from 'zod';
import { AppError, conflict, isUniqueViolation, notFound } from '../errors';
import { newId } from '../ids';
import { NAME_KINDS, nameSchema } from '../../core/model/names';
import { deserializeBitmap, type RoaringBitmap32, serializeBitmap } from './bitmap';
import { notifyCrowdChanged } from './changes';
import { checkCrowdUsers, tenantLimits } from '../limits/limits';
import { nextTurnOfTheLoop } from '../clock';
import type { Database } from '../storage/database';

export const CrowdName = nameSchema(NAME_KINDS.crowd);

export type CrowdMeta = { id: string; name: string; count: number; sizeBytes: number; createdAt: Date; updatedAt: Date };
export type LoadedCrowd = CrowdMeta & { bitmap: RoaringBitmap32 };
export type CrowdView = { name: string; count: number; sizeBytes: number; createdAt: string; updatedAt: string };

const META = { id: true, name: true, count: true, sizeBytes: true, createdAt: true, updatedAt: true } as const;

type MetaRow = { id: string; name: string; count: bigint; sizeBytes: bigint; createdAt: Date; updatedAt: Date };

const meta = (row: MetaRow): CrowdMeta => ({ ...row, count: Number(row.count), sizeBytes: Number(row.sizeBytes) });

export function crowdView(crowd: CrowdMeta): CrowdView {
  return {
    name: crowd.name,
    count: crowd.count,
    sizeBytes: crowd.sizeBytes,
    createdAt: crowd.createdAt.toISOString(),
    updatedAt: crowd.updatedAt.toISOString(),
  };
}

export async function listCrowds(database: Database, tenantId: string): Promise<CrowdMeta[]> {
  return (await database.db.crowd.findMany({ where: { tenantId }, select: META, orderBy: { name: 'asc' } })).map(meta);
}

/**
 * Whether `name` can name a stored crowd: names are checked when saved, so any other text (a NUL, which PostgreSQL
 * cannot even compare, a slash, 5,000 characters) names no crowd and needs no query.
 */
const storable = (name: string) => CrowdName.safeParse(name).success;

/** A crowd's metadata without its bitmap; 404 when missing. */
export async function requireCrowdMeta(database: Database, tenantId: string, name: string): Promise<CrowdMeta> {
  const row = storable(name) ? await database.db.crowd.findUnique({ where: { tenantId_name: { tenantId, name } }, select: META }) : null;
  if (!row) throw notFound(`Crowd "${name}"`);
  return meta(row);
}

/** A crowd with its bitmap, or null when the tenant has no crowd of that name. */
export async function loadCrowd(database: Database, tenantId: string, name: string): Promise<LoadedCrowd | null> {
  if (!storable(name)) return null;
  const row = await database.db.crowd.findUnique({ where: { tenantId_name: { tenantId, name } }, select: { ...META, bitmap: true } });
  if (!row) return null;
  const { bitmap, ...rest } = row;
  return { ...meta(rest), bitmap: storedBitmap(name, bitmap) };
}

/**
 * A stored crowd's bitmap, validated like an upload: crowds uploaded before roaring uploads were checked may hold a
 * corrupt one, which is refused by name (a 400 saying to upload it again) rather than combined, exported or started.
 */
function storedBitmap(name: string, bytes: Uint8Array): RoaringBitmap32 {
  try {
    return deserializeBitmap(bytes);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'invalid_bitmap') throw error;
    throw new AppError('invalid_bitmap', `Crowd "${name}" is stored corrupt; replace it with PUT (${error.message})`);
  }
}

/** Like loadCrowd, but a missing crowd is a 404 naming it. */
export async function requireCrowd(database: Database, tenantId: string, name: string): Promise<LoadedCrowd> {
  const crowd = await loadCrowd(database, tenantId, name);
  if (!crowd) throw notFound(`Crowd "${name}"`);
  return crowd;
}

/**
 * Stores a crowd in one statement: `create` refuses an existing name (409); `replace` creates or swaps the
 * whole bitmap atomically (readers see the old or the new crowd, never a mix).
 */
export async function saveCrowd(
  database: Database,
  tenantId: string,
  name: string,
  bitmap: RoaringBitmap32,
  mode: 'create' | 'replace',
): Promise<{ crowd: CrowdMeta; created: boolean }> {
  CrowdName.parse(name);
  const bytes = serializeBitmap(bitmap);
  const data = { count: BigInt(bitmap.size), sizeBytes: BigInt(bytes.byteLength), bitmap: bytes };
  const client = database.db;
  try {
    if (mode === 'create') {
      const row = await client.crowd.create({ data: { id: newId('cr'), tenantId, name, ...data }, select: META });
      notifyCrowdChanged(database, tenantId, name, 'saved');
      return { crowd: meta(row), created: true };
    }
    const existing = await client.crowd.findUnique({ where: { tenantId_name: { tenantId, name } }, select: { id: true } });
    const row = await client.crowd.upsert({
      where: { tenantId_name: { tenantId, name } },
      create: { id: newId('cr'), tenantId, name, ...data },
      update: { ...data, updatedAt: new Date() },
      select: META,
    });
    notifyCrowdChanged(database, tenantId, name, 'saved');
    return { crowd: meta(row), created: !existing };
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`Crowd "${name}" already exists`);
    throw error;
  }
}

/** Fails with 409 before any work (reading an upload, combining) when `create` would be refused anyway. */
export async function assertCrowdAbsent(database: Database, tenantId: string, name: string, howToReplace: string): Promise<void> {
  const existing = await database.db.crowd.findUnique({ where: { tenantId_name: { tenantId, name } }, select: { id: true } });
  if (existing) throw conflict(`Crowd "${name}" already exists; ${howToReplace}`);
}

/**
 * Deletes a crowd. Running instances are not affected: each keeps its own copy of its users in its shards;
 * only a later update-crowd naming this crowd would then get a 404.
 */
export async function deleteCrowd(database: Database, tenantId: string, name: string): Promise<void> {
  const { count } = await database.db.crowd.deleteMany({ where: { tenantId, name } });
  if (count === 0) throw notFound(`Crowd "${name}"`);
  notifyCrowdChanged(database, tenantId, name, 'deleted');
}

export const CombineOperation = z.enum(['union', 'intersection', 'difference']);

export const CombineCrowdsBody = z.strictObject({
  name: CrowdName,
  op: CombineOperation,
  crowds: z.array(CrowdName).min(1).max(100),
  replace: z.boolean().default(false),
});

/**
 * Makes a new crowd from existing ones: union (in any), intersection (in all), difference (in the first and
 * none of the others). Every source is named in the 404 when missing.
 */
export async function combineCrowds(
  database: Database,
  tenantId: string,
  body: z.infer<typeof CombineCrowdsBody>,
): Promise<{ crowd: CrowdMeta; created: boolean }> {
  if (!body.replace) await assertCrowdAbsent(database, tenantId, body.name, 'set "replace": true to replace it');
  const names = [...new Set(body.crowds)];
  const found = new Set((await database.db.crowd.findMany({ where: { tenantId, name: { in: names } }, select: { name: true } })).map((row) => row.name));
  const missing = names.filter((name) => !found.has(name));
  if (missing.length > 0) {
    throw new AppError('not_found', `Crowd${missing.length > 1 ? 's' : ''} ${missing.map((n) => `"${n}"`).join(', ')} not found`, { missing });
  }
  const result = await combine(body.op, body.crowds, async (name) => (await requireCrowd(database, tenantId, name)).bitmap);
  checkCrowdUsers(result.size, await tenantLimits(database, tenantId));
  return saveCrowd(database, tenantId, body.name, result, body.replace ? 'replace' : 'create');
}

/**
 * The crowds `names` combined by `op`, each loaded (by `load`, a fresh bitmap each time) when it is folded in. A
 * combine runs on the request thread every tenant shares, and a 9M-user crowd takes ~20 ms to load and ~20 ms to fold
 * in: one at a time, with a turn of the event loop after each load and each fold, up to 100 of them are that many
 * short blocks instead of one of seconds (and one crowd in memory besides the result instead of all of them).
 */
export async function combine(
  op: z.infer<typeof CombineOperation>,
  names: readonly string[],
  load: (name: string) => Promise<RoaringBitmap32>,
): Promise<RoaringBitmap32> {
  const [first, ...rest] = names;
  if (op === 'union') return fold(unique(names), load, (into, next) => into.orInPlace(next));
  if (op === 'intersection') return fold(unique(names), load, (into, next) => into.andInPlace(next));
  const others = unique(rest);
  const from = await load(first);
  if (others.length === 0) return from;
  const union = await fold(others, load, (into, next) => into.orInPlace(next));
  from.andNotInPlace(union);
  return from;
}

const unique = (names: readonly string[]) => [...new Set(names)];

/** The first crowd of `names` (at least one), each of the others folded into it by `into`. */
async function fold(
  names: readonly string[],
  load: (name: string) => Promise<RoaringBitmap32>,
  into: (result: RoaringBitmap32, next: RoaringBitmap32) => void,
): Promise<RoaringBitmap32> {
  const result = await load(names[0]);
  await nextTurnOfTheLoop();
  for (const name of names.slice(1)) {
    const next = await load(name);
    await nextTurnOfTheLoop();
    into(result, next);
    await nextTurnOfTheLoop();
  }
  return result;
}
