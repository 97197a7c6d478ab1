import { getCounts } from '@/server/http/counts-route';

// Usually answered by the fast lane (server/http/fast-lane.ts) before Next.js routes the request; same handler.
export const GET = getCounts;
