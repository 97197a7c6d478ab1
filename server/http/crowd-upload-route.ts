import { crowdView, uploadCrowd } from '../crowd';
import { json } from './respond';
import { tenantRoute } from './request-context';

// POST/PUT /api/v1/tenants/{tenant}/crowds/{name}: served by the route file and by server/http/http-server.ts alike.
// Our server hands these requests their body as the socket's own chunks, read as the parser asks for them; through
// Next.js the whole body was first copied chunk by chunk into a stream that buffers it all (a 90 MB upload: 90 MB
// more to copy and to collect, BENCHMARKS.md).

type Params = { tenant: string; name: string };

/** Upload a new crowd; 409 when the name is taken. */
export const postCrowd = tenantRoute<Params>(async ({ tenant, request, database, env }, params) => {
  const { crowd } = await uploadCrowd(database, request, tenant.id, params.name, 'create', env.CROWDFLOW_MAX_UPLOAD_BYTES);
  return json(crowdView(crowd), 201);
});

/** Upload a crowd, replacing the one of that name atomically if there is one. */
export const putCrowd = tenantRoute<Params>(async ({ tenant, request, database, env }, params) => {
  const { crowd, created } = await uploadCrowd(database, request, tenant.id, params.name, 'replace', env.CROWDFLOW_MAX_UPLOAD_BYTES);
  return json(crowdView(crowd), created ? 201 : 200);
});
