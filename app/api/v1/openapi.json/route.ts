import { json, route } from '@/server/http/respond';
import { openApiDocument } from '@/server/http/openapi';

export const GET = route(async () => json(openApiDocument()));
