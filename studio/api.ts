// The studio's only way to the server: the public v1 REST API, same-origin, authenticated by the
// session cookie set at sign-in. Every failure becomes an ApiError carrying the server's code and message.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const API_ROOT = '/api/v1';

async function errorFrom(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: { code: string; message: string; details?: unknown } };
    if (body.error) return new ApiError(response.status, body.error.code, body.error.message, body.error.details);
  } catch {
    // not JSON: fall through to the status line
  }
  return new ApiError(response.status, 'http_error', text.slice(0, 200) || `${response.status} ${response.statusText}`);
}

/** A JSON call; resolves with the parsed body (undefined for 204) or rejects with an ApiError. */
export async function apiCall<T>(method: string, path: string, body?: unknown): Promise<T> {
  refuseDotSegments(path);
  let response: Response;
  try {
    response = await fetch(`${API_ROOT}${path}`, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? undefined : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, 'network', `The server cannot be reached (${(error as Error).message})`);
  }
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const apiGet = <T>(path: string) => apiCall<T>('GET', path);

/** Uploads a file with upload progress (fetch has no upload progress; XMLHttpRequest does). */
export function apiUpload<T>(method: 'POST' | 'PUT', path: string, file: Blob, contentType: string, onProgress: (fraction: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    refuseDotSegments(path);
    const request = new XMLHttpRequest();
    request.open(method, `${API_ROOT}${path}`);
    request.setRequestHeader('content-type', contentType);
    request.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
    request.onerror = () => reject(new ApiError(0, 'network', 'The upload could not reach the server'));
    request.onload = () => {
      const text = request.responseText;
      if (request.status >= 200 && request.status < 300) {
        onProgress(1);
        resolve((text ? JSON.parse(text) : undefined) as T);
        return;
      }
      try {
        const body = JSON.parse(text) as { error: { code: string; message: string; details?: unknown } };
        reject(new ApiError(request.status, body.error.code, body.error.message, body.error.details));
      } catch {
        reject(new ApiError(request.status, 'http_error', text.slice(0, 200) || `HTTP ${request.status}`));
      }
    };
    request.send(file);
  });
}

/** Content type for an upload, from the file name (the server parses by content type). Plain text IDs go as text/csv
 * (read the same way): the server refuses text/plain from a signed-in session, the type a cross-site form can send. */
export function uploadContentType(fileName: string): string {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.json')) return 'application/json';
  if (lower.endsWith('.roaring') || lower.endsWith('.bin') || lower.endsWith('.rb')) return 'application/octet-stream';
  return 'text/csv';
}

/**
 * One path segment from a name or id. Browsers resolve `.` and `..` segments (also `%2e%2e`) before sending, so
 * `…/crowds/..` would reach the tenant itself: such a value is refused here, never sent.
 */
export function pathSegment(value: string): string {
  if (value === '.' || value === '..') throw new ApiError(400, 'bad_request', `"${value}" cannot be used in a URL path`);
  return encodeURIComponent(value);
}

function refuseDotSegments(path: string): void {
  const segments = path
    .split('?')[0]
    .split('/')
    .map((s) => s.replace(/%2e/gi, '.'));
  if (segments.some((s) => s === '.' || s === '..')) throw new ApiError(400, 'bad_request', `The path ${path} has a "." or ".." segment`);
}

export const tenantPath = (tenant: string, rest = '') => `/tenants/${pathSegment(tenant)}${rest}`;
