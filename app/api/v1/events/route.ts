import { postEvents } from '@/server/http/events-route';

// Usually answered by our HTTP server (server/http/http-server.ts) before Next.js routes the request; same handler.
export const POST = postEvents;
