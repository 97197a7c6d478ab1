import { crowdView, uploadCrowd } from '../crowd';
import { tenantFromRequest } from '../tenants/tenants';
import { json, route } from './respond';
import { database } from '../storage/database';

// POST/PUT /api/v1/tenants/{tenant}/crowds/{name}: served by the route file and by server/http/http-server.ts alike.
// Our server hands these requests their body as the socket's own chunks, read as the parser asks for them; through
// Next.js the whole body was first copied chunk by chunk into a stream that buffers it all (a 90 MB upload: 90 MB
// more to copy and to collect, BENCHMARKS.md).

type Params = { tenant: string; name: string };

/** Upload a new crowd; 409 when the name is taken. */
export const postCrowd = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { crowd } = await uploadCrowd(database(), request, tenant.id, params.name, 'create');
  return json(crowdView(crowd), 201);
});

/** Upload a crowd, replacing the one of that name atomically if there is one. */
export const putCrowd = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { crowd, created } = await uploadCrowd(database(), request, tenant.id, params.name, 'replace');
  return json(crowdView(crowd), created ? 201 : 200);
});
