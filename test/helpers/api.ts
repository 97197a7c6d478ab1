import { expect, inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { recordObserved } from './observed-statuses';

export type ApiResult<T = any> = { status: number; body: T; headers: Headers };

export function baseUrl(): string {
  return inject('baseUrl');
}

/** A JSON call against the real test server; bodies that are strings or bytes are sent as they are. */
export async function api<T = any>(
  method: string,
  path: string,
  options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiResult<T>> {
  const token = options.token === undefined ? inject('adminToken') : options.token;
  const headers: Record<string, string> = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...options.headers };
  let body: BodyInit | undefined;
  if (typeof options.body === 'string' || options.body instanceof Uint8Array) {
    body = options.body as BodyInit;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl()}/api/v1${path}`, { method, headers, body });
  recordObserved({ method, path: path.split('?')[0], status: response.status });
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: response.status, body: parsed as T, headers: response.headers };
}

/** Asserts the uniform error shape and returns the error. */
export function expectError(result: ApiResult, status: number, code: string): { code: string; message: string; details?: unknown } {
  expect(result.status, JSON.stringify(result.body)).toBe(status);
  expect(result.body.error.code).toBe(code);
  expect(typeof result.body.error.message).toBe('string');
  expect(result.body.error.message.length).toBeGreaterThan(0);
  return result.body.error;
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** Creates a tenant and one API key for it (scopes ingest, read and manage unless given). */
export async function createTenant(partitions = 4, scopes = ['ingest', 'read', 'manage']): Promise<{ name: string; id: string; key: string; keyId: string }> {
  const name = uniqueName('t');
  const tenant = await api('POST', '/tenants', { body: { name, partitions } });
  expect(tenant.status, JSON.stringify(tenant.body)).toBe(201);
  const key = await api('POST', `/tenants/${name}/keys`, { body: { name: 'test', scopes } });
  expect(key.status).toBe(201);
  return { name, id: tenant.body.id, key: key.body.secret, keyId: key.body.id };
}
