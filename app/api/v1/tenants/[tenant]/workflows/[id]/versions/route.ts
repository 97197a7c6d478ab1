import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';
import { listVersions } from '@/server/workflows/workflows';

export const GET = tenantRoute<{ tenant: string; id: string }>(async ({ tenant, database }, { id }) => json(await listVersions(database, tenant, id)));
