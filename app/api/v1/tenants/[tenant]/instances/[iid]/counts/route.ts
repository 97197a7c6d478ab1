import { getCounts } from '@/server/http/counts-route';

// Usually answered by our HTTP server (server/http/http-server.ts) before Next.js routes the request; same handler.
export const GET = getCounts;
