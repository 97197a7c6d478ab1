import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { retryProcedure } from '@/server/procedures/api';

export const POST = route<{ id: string }>(async (request, { id }) => json(await retryProcedure(await authenticate(request), id)));
