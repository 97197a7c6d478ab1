import { json, readJson } from '@/server/http/respond';
import { refuseAttributesPastLimit, UpsertProfilesBody } from '@/server/profiles/profiles';
import { tenantRoute } from '@/server/http/request-context';

/** Bulk upsert: merges each `{user, attributes}` into the stored profile (JSON Merge Patch), all or nothing. */
export const POST = tenantRoute<{ tenant: string }>(async ({ tenant, request, database, engine }) => {
  const items = await readJson(request, UpsertProfilesBody);
  await refuseAttributesPastLimit(database, tenant.id, items);
  return json(await engine.profiles.upsertProfiles(tenant.id, items));
});
