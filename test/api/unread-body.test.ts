import { connect, type Socket } from 'node:net';
import { describe, expect, inject, it } from 'vitest';
import { DRAIN_LIMIT_BYTES } from '../../server/http/request-body';
import { baseUrl, createTenant } from '../helpers/api';

// A route that answers before reading its whole body (an import's bad line) must leave the kept-alive connection
// usable: after the answer the rest is read and dropped, up to DRAIN_LIMIT_BYTES, past which the connection is closed
// (server/http/request-body.ts). The client here is a raw TCP connection, so "the same connection" is certain: it
// sends the whole body whatever the server answers, then its next request on that socket. A stalled connection
// would hang that request until the keep-alive timeout (65 s); the bound below turns that into a failure.
const STALL_BOUND_MS = 15_000;

type Answer = { status: number; headers: Record<string, string>; body: string };

/** One TCP connection to the test server that reads the answers (with a content-length) in order. */
class Connection {
  private readonly socket: Socket;
  private received = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  closed = false;

  constructor() {
    const url = new URL(baseUrl());
    this.socket = connect(Number(url.port), url.hostname);
    this.socket.on('data', (data) => {
      this.received = Buffer.concat([this.received, data]);
      this.wake?.();
    });
    this.socket.on('error', () => undefined); // a reset after the server closed: `closed` says so
    this.socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  send(method: string, path: string, headers: Record<string, string>, body: Uint8Array = new Uint8Array(0)): void {
    const head = [`${method} ${path} HTTP/1.1`];
    const all = { host: new URL(baseUrl()).host, authorization: `Bearer ${inject('adminToken')}`, ...headers, 'content-length': String(body.length) };
    for (const [name, value] of Object.entries(all)) head.push(`${name}: ${value}`);
    this.socket.write(`${head.join('\r\n')}\r\n\r\n`);
    if (body.length > 0) this.socket.write(body);
  }

  /** The next answer on this connection, or null if the server closed it first. */
  async answer(): Promise<Answer | null> {
    let stalled = false;
    const bound = setTimeout(() => {
      stalled = true;
      this.wake?.();
    }, STALL_BOUND_MS);
    try {
      for (;;) {
        const parsed = this.parse();
        if (parsed) return parsed;
        if (this.closed) return null;
        if (stalled) throw new Error(`no answer within ${STALL_BOUND_MS} ms on a connection that stayed open`);
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      clearTimeout(bound);
    }
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): Answer | null {
    const end = this.received.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = this.received.subarray(0, end).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length)) throw new Error(`an answer without content-length: ${statusLine}`);
    if (this.received.length < end + 4 + length) return null;
    const body = this.received.subarray(end + 4, end + 4 + length).toString('utf8');
    this.received = this.received.subarray(end + 4 + length);
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }
}

/** An NDJSON import whose first line is bad, padded with good lines to about `bytes`. */
function badImport(bytes: number): Buffer {
  const good = '{"user": 1, "attributes": {"plan": "pro"}}\n';
  return Buffer.from(`{"user": -1, "attributes": {}}\n${good.repeat(Math.ceil(bytes / good.length))}`);
}

const ndjson = { 'content-type': 'application/x-ndjson' };

describe('a request body the route did not read', () => {
  it('is read and dropped after the answer: the next request on the same connection is answered', async () => {
    const tenant = await createTenant(1);
    // A counts GET of an instance that does not exist: a 404 our own server answers, with a content-length.
    const next = `/api/v1/tenants/${tenant.name}/instances/none/counts`;
    for (const bytes of [1_000_000, 40_000_000]) {
      const connection = new Connection();
      try {
        connection.send('POST', `/api/v1/tenants/${tenant.name}/profiles/import`, ndjson, badImport(bytes));
        connection.send('GET', next, {});
        const refused = await connection.answer();
        expect(refused?.status, refused?.body).toBe(400);
        expect(JSON.parse(refused!.body).error.message).toMatch(/^line 1: /);
        const answered = await connection.answer();
        expect(answered?.status, `after ${bytes} bytes`).toBe(404);
        expect(JSON.parse(answered!.body).error.code).toBe('not_found');
        expect(connection.closed).toBe(false);
      } finally {
        connection.close();
      }
    }
  });

  it('closes the connection past the drain limit, after the answer', async () => {
    const tenant = await createTenant(1);
    const connection = new Connection();
    try {
      connection.send('POST', `/api/v1/tenants/${tenant.name}/profiles/import`, ndjson, badImport(DRAIN_LIMIT_BYTES * 1.5));
      const refused = await connection.answer();
      expect(refused?.status, refused?.body).toBe(400);
      expect(JSON.parse(refused!.body).error.message).toMatch(/^line 1: /);
      expect(await connection.answer()).toBeNull();
      expect(connection.closed).toBe(true);
    } finally {
      connection.close();
    }
  });

  it('is read and dropped when a crowd upload is refused before reading it (unauthorized)', async () => {
    const tenant = await createTenant(1);
    const connection = new Connection();
    try {
      connection.send(
        'PUT',
        `/api/v1/tenants/${tenant.name}/crowds/c`,
        { 'content-type': 'text/plain', authorization: 'Bearer wrong' },
        Buffer.from('1\n'.repeat(500_000)),
      );
      connection.send('GET', `/api/v1/tenants/${tenant.name}/instances/none/counts`, {});
      expect((await connection.answer())?.status).toBe(401);
      expect((await connection.answer())?.status).toBe(404);
    } finally {
      connection.close();
    }
  });

  it('does not break fetch (undici): the early answer arrives, and so do the next ones', async () => {
    const tenant = await createTenant(1);
    const headers = { authorization: `Bearer ${inject('adminToken')}` };
    for (const bytes of [2_000_000, 40_000_000]) {
      const refused = await fetch(`${baseUrl()}/api/v1/tenants/${tenant.name}/profiles/import`, {
        method: 'POST',
        headers: { ...headers, ...ndjson },
        body: new Uint8Array(badImport(bytes)),
        signal: AbortSignal.timeout(STALL_BOUND_MS),
      });
      expect(refused.status).toBe(400);
      expect((await refused.json()).error.message).toMatch(/^line 1: /);
      for (let i = 0; i < 3; i++) {
        const next = await fetch(`${baseUrl()}/api/v1/tenants/${tenant.name}`, { headers, signal: AbortSignal.timeout(STALL_BOUND_MS) });
        expect(next.status).toBe(200);
        await next.arrayBuffer();
      }
    }
  });
});
