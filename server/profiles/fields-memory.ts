// GET …/profiles/fields with what the profile index holds in memory for each attribute path (an estimate: bitmaps,
// equality-bitmap keys, per-user values; FieldIndex.memoryBytes) and in all, and the tenant's attribute limits, so an
// integrator sees what their attributes cost and how close they are to maxProfileAttributes.
import { tenantLimits } from '../limits/limits';
import type { Database } from '../storage/database';
import { profileFields, type FieldSummary } from './audience';
import { profileIndex } from './index-store';

export type FieldWithMemory = FieldSummary & { memoryBytes: number };

export type ProfileFieldsAnswer = {
  profiles: number;
  bitmapBytes: number;
  /** The whole index's estimated memory: the users bitmap and every path's memoryBytes. */
  memoryBytes: number;
  limits: { maxProfileAttributes: number; maxIndexedValuesPerAttribute: number };
  fields: FieldWithMemory[];
};

export async function profileFieldsWithMemory(database: Database, tenantId: string): Promise<ProfileFieldsAnswer> {
  const { maxProfileAttributes, maxIndexedValuesPerAttribute } = await tenantLimits(database, tenantId);
  const summary = await profileFields(database, tenantId);
  const index = await profileIndex(database, tenantId);
  // By the dotted path the summary names (two paths reading the same, as key "a.b" and a.b nested, add up): a path
  // the summary has and the index no longer has was emptied by a write in between, and holds nothing now.
  const byPath = new Map<string, number>();
  for (const { segments, field } of index.paths()) {
    const path = segments.join('.');
    byPath.set(path, (byPath.get(path) ?? 0) + field.memoryBytes());
  }
  const fields = summary.fields.map((field) => ({ ...field, memoryBytes: byPath.get(field.path) ?? 0 }));
  const memoryBytes = index.users.getSerializationSizeInBytes('portable') + [...byPath.values()].reduce((sum, bytes) => sum + bytes, 0);
  return { ...summary, memoryBytes, limits: { maxProfileAttributes, maxIndexedValuesPerAttribute }, fields };
}
