import { json, readJson } from '@/server/http/respond';
import { createCap, CreateCapBody, listCaps } from '@/server/webhooks/caps';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, database }) => {
  return json({ caps: await listCaps(database, tenant.id) });
});

export const POST = tenantRoute<{ tenant: string }>(async ({ tenant, request, database, clock, audit }) => {
  const body = await readJson(request, CreateCapBody);
  const cap = await createCap(database, tenant.id, body, clock.now());
  await audit('cap.create', { target: cap.name, details: body });
  return json(cap, 201);
});
