import { ZodError, type ZodType, type z } from 'zod';
import { AppError, isForeignKeyViolation, isUniqueViolation } from '../errors';
import { parseJsonBody } from '../json-body';
import { inexactApiPath } from './exact-path';
import { describeStorageError, isTransientStorageError } from '../storage/transient';

/** A response json() built: it keeps its JSON text, for our HTTP server to write without reading the body back. */
class JsonResponse extends Response {
  constructor(
    readonly jsonText: string,
    init: ResponseInit,
  ) {
    super(jsonText, init);
  }
}

export function json(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  const text = JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? Number(value) : value));
  return new JsonResponse(text, { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });
}

/**
 * The body of a response json() built, as text (undefined for any other response). Reading a Response's body back
 * through its stream cost our server ≈ 0.1 ms per counts request, more than the answer itself.
 */
export function jsonTextOf(response: Response): string | undefined {
  return response instanceof JsonResponse ? response.jsonText : undefined;
}

export function errorResponse(error: unknown): Response {
  if (error instanceof AppError) {
    const retryAfter = (error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
    const headers: Record<string, string> = retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) };
    // RFC 6750: a 401 names the scheme the client should authenticate with.
    if (error.status === 401) headers['www-authenticate'] = 'Bearer realm="crowdflow"';
    return json(
      { error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } },
      error.status,
      headers,
    );
  }
  if (error instanceof ZodError) {
    const first = error.issues[0];
    const where = first?.path.length ? first.path.join('.') : 'body';
    return json(
      {
        error: {
          code: 'validation_failed',
          message: `${where}: ${first?.message ?? 'invalid input'}`,
          details: {
            path: first?.path.length ? first.path.join('.') : '',
            problems: error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
          },
        },
      },
      400,
    );
  }
  if (isUniqueViolation(error)) return json({ error: { code: 'conflict', message: 'A resource with this name already exists' } }, 409);
  if (isForeignKeyViolation(error))
    return json({ error: { code: 'not_found', message: 'What this request refers to was deleted meanwhile (its tenant, say)' } }, 404);
  // The one classification of storage errors (server/storage/transient.ts) that the retrying parts use too: a transient
  // error that reached a route outlasted every wait and retry below it (SQLite's lock 30 s, a request's 3 s of
  // retryTransient, PostgreSQL's connection wait), or hit a statement no part retries (a lost connection mid-statement,
  // a serialization failure or deadlock in a request's own transaction). Sending the request again may succeed.
  if (isTransientStorageError(error)) {
    console.warn('[crowdflow] a request met a transient storage error:', describeStorageError(error));
    return json(
      { error: { code: 'unavailable', message: 'The database was busy or out of reach for longer than a request may wait; retry in a moment' } },
      503,
      { 'retry-after': '1' },
    );
  }
  console.error('[crowdflow] unexpected error', error);
  return json({ error: { code: 'internal', message: 'Internal error' } }, 500);
}

export type Params = Record<string, string | string[]>;
type Context = { params: Promise<Params> };
type Handler<P extends Params> = (request: Request, params: P) => Promise<Response>;

/** Wraps a route handler: resolves params, maps every thrown error through the one error table. */
export function route<P extends Params = Params>(handler: Handler<P>) {
  return async (request: Request, context: Context): Promise<Response> => {
    try {
      refuseInexactPath(request);
      const params = ((await context?.params) ?? {}) as P;
      refuseNul(request, params);
      return await handler(request, params);
    } catch (error) {
      if (isClientAbort(request, error)) return clientAborted(request, error);
      return errorResponse(error);
    }
  };
}

/**
 * The client went away mid-request: Next.js aborts the request's signal; on our direct routes reading the body fails
 * with Node's error for a request closed before its end (`aborted`, ECONNRESET; a reset socket elsewhere, such as the
 * database's, says `read ECONNRESET` and stays an unexpected error).
 */
function isClientAbort(request: Request, error: unknown): boolean {
  if (request.signal.aborted) return true;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'ECONNRESET' && message === 'aborted';
}

function clientAborted(request: Request, error: unknown): Response {
  const why = error instanceof Error ? error.message : String(error);
  console.info(`[crowdflow] client aborted ${request.method} ${new URL(request.url).pathname} (${why})`);
  // Nobody reads this answer; 499 is what proxies log for a request the client closed.
  return new Response(null, { status: 499 });
}

function refuseInexactPath(request: Request): void {
  const problem = inexactApiPath(request.method, new URL(request.url).pathname);
  if (problem) throw new AppError('not_found', problem);
}

/** No id, name or query value can hold a NUL, and PostgreSQL refuses one in a query: answer 400 before any lookup. */
function refuseNul(request: Request, params: Params): void {
  for (const [name, value] of Object.entries(params)) {
    if ([value].flat().some((v) => v.includes('\u0000'))) throw new AppError('bad_request', `Path parameter "${name}" contains a NUL character`);
  }
  for (const [name, value] of new URL(request.url).searchParams) {
    if (name.includes('\u0000') || value.includes('\u0000'))
      throw new AppError('bad_request', `Query parameter "${name.replace(/\u0000/g, '\\0')}" contains a NUL character`);
  }
}

const DEFAULT_JSON_LIMIT = 32 * 1024 * 1024;

/** Reads a JSON body with a size cap and validates it; malformed JSON and wrong shapes are 400s. */
export async function readJson<S extends ZodType>(request: Request, schema: S, limit = DEFAULT_JSON_LIMIT): Promise<z.infer<S>> {
  return schema.parse(parseJsonBody((await readJsonBytes(request, limit)).toString('utf8')));
}

/**
 * The bytes of a JSON body as sent, with the content type and size checked, for a caller that decodes them elsewhere
 * (event batches: in the engine thread, which also hashes these bytes for an Idempotency-Key).
 */
export async function readJsonBytes(request: Request, limit = DEFAULT_JSON_LIMIT): Promise<Buffer> {
  const type = request.headers.get('content-type') ?? '';
  if (type && !type.includes('json')) throw new AppError('unsupported_media_type', `Expected application/json, got ${type}`);
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > limit) throw new AppError('payload_too_large', `The body is ${declared} bytes; the limit is ${limit}`);
  return readBytesCapped(request, limit);
}

async function readBytesCapped(request: Request, limit: number): Promise<Buffer> {
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new AppError('payload_too_large', `The body is larger than the limit of ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

export function queryParams<S extends ZodType>(request: Request, schema: S): z.infer<S> {
  const parsed = schema.safeParse(Object.fromEntries(new URL(request.url).searchParams));
  if (parsed.success) return parsed.data;
  // A parameter the route does not know is the first thing to say: it may be a misspelling of a required one.
  const unknown = parsed.error.issues.filter((issue) => issue.code === 'unrecognized_keys');
  throw new ZodError([...unknown, ...parsed.error.issues.filter((issue) => issue.code !== 'unrecognized_keys')]);
}
