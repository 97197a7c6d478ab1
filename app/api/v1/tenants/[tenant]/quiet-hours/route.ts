import { json, readJson } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';
import { deleteQuietHours, getQuietHours, PutQuietHoursBody, putQuietHours } from '@/server/webhooks/quiet-rules';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, database }) => {
  return json(await getQuietHours(database, tenant.id));
});

export const PUT = tenantRoute<{ tenant: string }>(async ({ tenant, request, database, clock, audit }) => {
  const body = await readJson(request, PutQuietHoursBody);
  const { view, created } = await putQuietHours(database, tenant.id, body, clock.now());
  await audit('quiet-hours.put', { target: tenant.name, details: body });
  return json(view, created ? 201 : 200);
});

export const DELETE = tenantRoute<{ tenant: string }>(async ({ tenant, database, audit }) => {
  await deleteQuietHours(database, tenant.id);
  await audit('quiet-hours.delete', { target: tenant.name });
  return new Response(null, { status: 204 });
});
