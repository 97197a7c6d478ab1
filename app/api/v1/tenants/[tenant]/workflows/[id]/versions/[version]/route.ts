import { AppError } from '@/server/errors';
import { json, route } from '@/server/http/respond';
import { getVersion, VersionParam } from '@/server/workflows/workflows';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; id: string; version: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }, { id, version }) => {
  const number = VersionParam.safeParse(version);
  if (!number.success) throw new AppError('validation_failed', `version: "${version}" is not a version number; versions are whole numbers from 1`);
  return json(await getVersion(database, tenant, id, Number(number.data)));
});

// Versions are immutable: every save of a workflow makes a new one.
const immutable = route(async () => {
  throw new AppError('method_not_allowed', 'Workflow versions are immutable; save the workflow (PUT /tenants/{tenant}/workflows/{id}) to make a new version');
});
export { immutable as PUT, immutable as PATCH, immutable as DELETE, immutable as POST };
