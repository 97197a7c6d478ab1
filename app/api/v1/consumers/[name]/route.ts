import { authenticate } from '@/server/auth';
import { callerTenant } from '@/server/tenants/tenants';
import { ConsumerParams, createConsumer, CreateConsumerBody, deleteConsumer, getConsumer, TenantQuery } from '@/server/notifications/notifications';
import { json, queryParams, readJson, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';

type Params = { name: string };

async function tenantOf(request: Request) {
  return callerTenant(database(), await authenticate(request), queryParams(request, TenantQuery).tenant);
}

export const GET = route<Params>(async (request, { name }) => {
  const tenant = await tenantOf(request);
  return json(await getConsumer(database(), tenant.id, ConsumerParams.parse({ name }).name));
});

/** Creates the consumer (201) at `start`; an existing one is returned unchanged (200). */
export const PUT = route<Params>(async (request, { name }) => {
  const tenant = await tenantOf(request);
  const consumerName = ConsumerParams.parse({ name }).name;
  const body = await readJson(request, CreateConsumerBody);
  const { consumer, created } = await createConsumer(database(), tenant.id, consumerName, body.start);
  return json(consumer, created ? 201 : 200);
});

export const DELETE = route<Params>(async (request, { name }) => {
  const tenant = await tenantOf(request);
  await deleteConsumer(database(), tenant.id, ConsumerParams.parse({ name }).name);
  return new Response(null, { status: 204 });
});
