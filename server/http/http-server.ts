// The request listener of Crowdflow's own HTTP server (server/main.ts, a Next.js custom server). Three things happen
// here, before any request reaches Next.js:
// 1. API paths Next.js would mishandle are answered: a malformed percent-escape (Next's router answers 500) is a 400;
//    an inexact path (server/http/exact-path.ts: a trailing slash, an empty or `.`/`..` segment, also as %2e) or a
//    backslash (Next reads it as a slash) is a 404. Next would redirect those (308) to a normalized
//    path — `DELETE …/crowds/..` to `DELETE /tenants/T` — so they never reach it.
// 2. Per-step counts, read by live canvases and integrations many times a second, and event batches (POST /events) are
//    answered directly by the same handler function the route file exports (same auth, same errors): Next's router and
//    route runtime cost more server CPU per request than the answer itself (BENCHMARKS.md). So are crowd uploads and
//    profile imports, whose body then streams from the socket as the parser reads it (Next copies every chunk into a
//    stream that buffers the whole body), and whose unread rest, after an early answer, is dropped without stalling the
//    connection.
// 3. Everything else goes to Next's request handler.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { PEER_ADDRESS_HEADER } from '../security/client-address';
import { inexactApiPath } from './exact-path';
import { RequestBody } from './request-body';
import { jsonTextOf } from './respond';

/** Marks answers served here without Next.js (for tests and for telling the two paths apart when debugging). */
export const DIRECT_ROUTE_HEADER = 'x-crowdflow-fast-lane';

type RouteHandler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>;
export interface DirectRoute {
  method: 'GET' | 'POST' | 'PUT';
  /** Path segments; `:name` is a parameter. */
  path: string;
  handler: RouteHandler;
}

export type NextRequestHandler = (request: IncomingMessage, response: ServerResponse) => Promise<void>;

export function crowdflowRequestListener(routes: DirectRoute[], next: NextRequestHandler): RequestListener {
  const compiled = routes.map((r) => ({ method: r.method, segments: r.path.split('/').filter(Boolean), handler: r.handler }));
  return (request, response) => {
    // The peer's address, for whatever a route needs the client's address for; a value the client sent is replaced.
    request.headers[PEER_ADDRESS_HEADER] = request.socket.remoteAddress ?? '';
    const url = request.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    if (isApiPath(path)) {
      const segments = decodedSegments(path);
      if (segments === null)
        return refuse(response, 400, 'bad_request', 'The path has a malformed percent-escape (a "%" not followed by a valid UTF-8 byte sequence)');
      const inexact = path.includes('\\')
        ? `No API route ${request.method} ${path}: API paths have no backslash (read as a slash, it makes segments the path does not name)`
        : inexactApiPath(request.method ?? 'GET', path);
      if (inexact) return refuse(response, 404, 'not_found', inexact);
      const match = matchRoute(compiled, request.method ?? '', segments);
      if (match) return void serve(match.handler, match.params, request, response);
    }
    next(request, response).catch((error: unknown) => failed(response, error));
  };
}

/** Leading slashes and backslashes are collapsed by Next's router, so `//api/…` and `\api\…` are API paths too. */
function isApiPath(path: string): boolean {
  return /^[/\\]+api(?:[/\\]|$)/i.test(path);
}

/** The path's segments (after the leading slash), percent-decoded; null when an escape is malformed. */
function decodedSegments(path: string): string[] | null {
  try {
    return path.slice(1).split('/').map(decodeURIComponent);
  } catch {
    return null;
  }
}

function matchRoute(
  routes: { method: string; segments: string[]; handler: RouteHandler }[],
  method: string,
  parts: string[],
): { handler: RouteHandler; params: Record<string, string> } | null {
  for (const route of routes) {
    if (route.method !== method || route.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let matched = true;
    for (let i = 0; i < parts.length && matched; i++) {
      const segment = route.segments[i];
      if (segment.startsWith(':')) params[segment.slice(1)] = parts[i];
      else matched = segment === parts[i];
    }
    if (matched) return { handler: route.handler, params };
  }
  return null;
}

function refuse(response: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
  response.end(body);
}

async function serve(handler: RouteHandler, params: Record<string, string>, incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
  // A body is the socket's chunks as they are read (backpressure intact), not a copy; what the handler leaves unread
  // is read and dropped once the answer is written (server/http/request-body.ts).
  const body = incoming.method === 'GET' || incoming.method === 'HEAD' ? undefined : new RequestBody(incoming);
  if (body) outgoing.once('finish', () => body.settle());
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value !== undefined) for (const v of [value].flat()) headers.append(name, v);
    }
    const request = new Request(`http://${incoming.headers.host ?? 'localhost'}${incoming.url}`, {
      method: incoming.method,
      headers,
      body: body?.stream,
      duplex: 'half',
    } as RequestInit);
    const response = await handler(request, { params: Promise.resolve(params) });
    const text = jsonTextOf(response);
    const answer = text === undefined ? Buffer.from(await response.arrayBuffer()) : Buffer.from(text);
    outgoing.writeHead(response.status, { ...Object.fromEntries(response.headers), 'content-length': String(answer.length), [DIRECT_ROUTE_HEADER]: '1' });
    outgoing.end(answer);
  } catch (error) {
    // route() maps every error itself; this is a broken connection or a bug in the dispatch.
    failed(outgoing, error);
  }
}

function failed(response: ServerResponse, error: unknown): void {
  console.error('[crowdflow] request failed', error);
  if (response.headersSent) return void response.end();
  refuse(response, 500, 'internal', 'Internal error');
}
