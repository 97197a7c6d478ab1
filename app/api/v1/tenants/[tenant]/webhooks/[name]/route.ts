import { json, readJson } from '@/server/http/respond';
import {
  deleteDestination,
  DestinationParams,
  destinationView,
  requireDestination,
  updateDestination,
  UpdateDestinationBody,
} from '@/server/webhooks/destinations';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; name: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }, params) => {
  return json(destinationView(await requireDestination(database, tenant.id, DestinationParams.parse(params).name)));
});

export const PATCH = tenantRoute<Params>(async ({ tenant, request, database, env, clock, audit }, params) => {
  const { name } = DestinationParams.parse(params);
  const body = await readJson(request, UpdateDestinationBody);
  const destination = await updateDestination(database, tenant.id, name, body, clock.now(), env.CROWDFLOW_WEBHOOK_ALLOW_PRIVATE);
  await audit('webhook.update', { target: name, details: { fields: Object.keys(body) } });
  return json(destination);
});

export const DELETE = tenantRoute<Params>(async ({ tenant, database, audit }, params) => {
  const { name } = DestinationParams.parse(params);
  await deleteDestination(database, tenant.id, name);
  await audit('webhook.delete', { target: name });
  return new Response(null, { status: 204 });
});
