// Cross-site request forgery: a page on another origin (even another port of the same host, which is the same
// *site*) can make the browser send the studio's session cookie with a POST, PUT or DELETE. Requests authenticated by
// that cookie which change state must therefore come from the studio's own origin, and a body must have a content type
// a cross-origin page cannot send without a CORS preflight (which this server never grants). Bearer-token requests
// carry no ambient credential and are not affected.
import { AppError } from '../errors';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The content types an HTML form or a `no-cors` fetch may send (the CORS-safelisted ones). */
const SIMPLE_TYPES: ReadonlySet<string> = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

/** The host (name:port) the request was sent to, as the browser saw it. */
function requestHost(request: Request): string {
  return request.headers.get('x-forwarded-host') ?? request.headers.get('host') ?? new URL(request.url).host;
}

function originHost(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null; // "null" (sandboxed frames, file:) or garbage
  }
}

/** Throws unless a cookie-authenticated request may change state: same origin, and no form-style body. */
export function assertSameOriginWrite(request: Request): void {
  if (SAFE_METHODS.has(request.method)) return;
  const site = request.headers.get('sec-fetch-site');
  const origin = request.headers.get('origin');
  if (site !== null && site !== 'same-origin') {
    throw new AppError(
      'forbidden',
      `Cross-origin request refused: a signed-in studio session only accepts changes from the studio's own pages (Sec-Fetch-Site: ${site})`,
    );
  }
  if (origin !== null && originHost(origin) !== requestHost(request)) {
    throw new AppError(
      'forbidden',
      `Cross-origin request refused: a signed-in studio session only accepts changes from the studio's own origin, not ${origin.slice(0, 100)}`,
    );
  }
  if (site === null && origin === null) {
    throw new AppError(
      'forbidden',
      'A request authenticated by the studio session cookie that changes state must carry an Origin or Sec-Fetch-Site header (browsers send one); API clients send Authorization: Bearer instead',
    );
  }
  const hasBody = Number(request.headers.get('content-length') ?? 0) > 0 || request.headers.has('transfer-encoding');
  const type = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (hasBody && (type === '' || SIMPLE_TYPES.has(type))) {
    throw new AppError(
      'unsupported_media_type',
      `A signed-in studio request must send its body as application/json (crowd uploads: text/csv, application/octet-stream), not ${type || 'without a Content-Type'}`,
    );
  }
}
