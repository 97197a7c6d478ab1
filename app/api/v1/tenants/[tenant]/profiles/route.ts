import { json, readJson, route } from '@/server/http/respond';
import { getEngine } from '@/server/engine';
import { refuseAttributesPastLimit, UpsertProfilesBody } from '@/server/profiles/profiles';
import { database } from '@/server/storage/database';
import { tenantFromRequest } from '@/server/tenants/tenants';

/** Bulk upsert: merges each `{user, attributes}` into the stored profile (JSON Merge Patch), all or nothing. */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const items = await readJson(request, UpsertProfilesBody);
  await refuseAttributesPastLimit(database(), tenant.id, items);
  return json(await getEngine().profiles.upsertProfiles(tenant.id, items));
});
