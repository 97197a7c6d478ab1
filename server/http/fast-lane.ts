// A few hot GET endpoints are answered before Next.js routes the request. Per-step counts are read by live canvases
// and integrations many times a second, and the answer costs our code microseconds from memory, while Next's router
// and route runtime cost ≈ 2.5 ms of server CPU per request and a tail of several ms (BENCHMARKS.md). The handlers
// are the same functions the route files export (`route()`-wrapped: same auth, same errors); only the dispatch
// differs. Anything that does not match exactly (other methods, trailing slashes) goes to Next. API paths with a
// malformed percent-escape, which Next's router answers with a 500, get a 400 here.
import http from 'node:http';
import { inexactApiPath } from './exact-path';

/** Marks answers of the fast lane (for tests and for telling the two paths apart when debugging). */
export const FAST_LANE_HEADER = 'x-crowdflow-fast-lane';

type Handler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>;
export interface FastRoute {
  /** Path segments; `:name` is a parameter. */
  path: string;
  handler: Handler;
}

const installedKey = Symbol.for('crowdflow.fast-lane');
const flags = globalThis as unknown as Record<symbol, boolean | undefined>;

export function installFastLane(routes: FastRoute[]): void {
  if (flags[installedKey]) return;
  flags[installedKey] = true;
  const compiled = routes.map((r) => ({ segments: r.path.split('/').filter(Boolean), handler: r.handler }));
  const emit = http.Server.prototype.emit;
  // Next.js owns the server object; its 'request' events are the one place to step in before its router.
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event === 'request') {
      const [request, response] = args as [http.IncomingMessage, http.ServerResponse];
      if (hasMalformedEscape(request.url ?? '')) {
        refuse(response, 400, 'bad_request', 'The path has a malformed percent-escape (a "%" not followed by a valid UTF-8 byte sequence)');
        return true;
      }
      const inexact = inexactRequestPath(request);
      if (inexact) {
        refuse(response, 404, 'not_found', inexact);
        return true;
      }
      const match = request.method === 'GET' ? matchRoute(compiled, request.url ?? '') : null;
      if (match) {
        void serve(match.handler, match.params, request, response);
        return true;
      }
    }
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  } as typeof emit;
}

/** An API path Next.js cannot decode (`%E0%A4%A`): it would answer 500 from its router. */
function hasMalformedEscape(url: string): boolean {
  if (!url.startsWith('/api/') || !url.includes('%')) return false;
  const queryAt = url.indexOf('?');
  try {
    decodeURIComponent(queryAt === -1 ? url : url.slice(0, queryAt));
    return false;
  } catch {
    return true;
  }
}

/** Checked here, before Next's router, which would answer an inexact API path with a 308 to another path. */
function inexactRequestPath(request: http.IncomingMessage): string | null {
  const url = request.url ?? '';
  if (!url.startsWith('/api/')) return null;
  const queryAt = url.indexOf('?');
  return inexactApiPath(request.method ?? 'GET', queryAt === -1 ? url : url.slice(0, queryAt));
}

function refuse(response: http.ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
  response.end(body);
}

function matchRoute(routes: { segments: string[]; handler: Handler }[], url: string): { handler: Handler; params: Record<string, string> } | null {
  const queryAt = url.indexOf('?');
  const parts = (queryAt === -1 ? url : url.slice(0, queryAt)).split('/');
  if (parts[0] !== '' || parts.at(-1) === '') return null;
  parts.shift();
  for (const route of routes) {
    if (route.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let matched = true;
    for (let i = 0; i < parts.length && matched; i++) {
      const segment = route.segments[i];
      if (segment.startsWith(':')) {
        params[segment.slice(1)] = decodeURIComponent(parts[i]); // malformed escapes were refused before
      } else matched = segment === parts[i];
    }
    if (matched) return { handler: route.handler, params };
  }
  return null;
}

async function serve(handler: Handler, params: Record<string, string>, incoming: http.IncomingMessage, outgoing: http.ServerResponse): Promise<void> {
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value !== undefined) for (const v of [value].flat()) headers.append(name, v);
    }
    const request = new Request(`http://${incoming.headers.host ?? 'localhost'}${incoming.url}`, { method: 'GET', headers });
    const response = await handler(request, { params: Promise.resolve(params) });
    const body = Buffer.from(await response.arrayBuffer());
    outgoing.writeHead(response.status, { ...Object.fromEntries(response.headers), 'content-length': String(body.length), [FAST_LANE_HEADER]: '1' });
    outgoing.end(body);
  } catch (error) {
    // route() maps every error itself; this is a broken connection or a bug in the dispatch.
    console.error('[crowdflow] fast lane failed', error);
    if (!outgoing.headersSent) outgoing.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
    outgoing.end(JSON.stringify({ error: { code: 'internal', message: 'Internal error' } }));
  }
}
