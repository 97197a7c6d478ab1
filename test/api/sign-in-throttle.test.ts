import { request } from 'node:http';
import { describe, expect, inject, it } from 'vitest';
import { api } from '../helpers/api';

// Failed studio sign-ins are throttled per client address (server/security/sign-in-throttle.ts): 10 failures, then
// 429 rate_limited with Retry-After for every attempt from that address, a correct token too. The address is the
// socket's peer: each test signs in from its own loopback address (Linux routes all of 127/8 to lo), so it neither
// disturbs nor depends on the other tests' sign-ins from 127.0.0.1. The window and the account-wide limit are covered
// with an injected clock in test/unit/sign-in-throttle.test.ts.

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: any };

/** A different 127.x.y.0/24 each run, so addresses never carry state over from an earlier run against this server. */
const net = `127.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;

function signInFrom(localAddress: string, token: string, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL('/api/v1/session', inject('baseUrl'));
  const body = JSON.stringify({ token });
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      { method: 'POST', localAddress, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text ? JSON.parse(text) : null }));
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

const wrong = 'wrong-token-000000';

describe('sign-in throttling', () => {
  it('refuses an address with 429 and Retry-After after 10 failures, a correct token too; another address signs in', async () => {
    const guesser = `${net}.1`;
    const firstFailure = Date.now();
    for (let i = 0; i < 10; i++) expect((await signInFrom(guesser, wrong)).status).toBe(401);

    const refused = await signInFrom(guesser, wrong);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(refused.body.error.message).toMatch(/Too many failed sign-ins from this address/);
    // 10 failures per 15 min refill one attempt every 90 s, counted from the first failure: what the server's clock
    // refilled while the 11 sign-ins ran (seconds on a busy machine) comes off the 90.
    const retryAfter = Number(refused.headers['retry-after']);
    const refilling = Math.ceil((Date.now() - firstFailure) / 1000);
    expect(retryAfter).toBeGreaterThanOrEqual(90 - refilling - 1);
    expect(retryAfter).toBeLessThanOrEqual(90);

    const correct = await signInFrom(guesser, inject('adminToken'));
    expect(correct.status).toBe(429);
    expect(correct.headers['set-cookie']).toBeUndefined();

    // Headers naming another client do not help: the peer is not a trusted proxy, and our server replaces the header
    // it stamps the peer address in.
    const spoofed = { 'x-forwarded-for': `${net}.99`, 'x-crowdflow-peer-address': `${net}.98` };
    expect((await signInFrom(guesser, inject('adminToken'), spoofed)).status).toBe(429);

    const other = await signInFrom(`${net}.2`, inject('adminToken'));
    expect(other.status).toBe(200);
    expect(other.headers['set-cookie']?.[0]).toMatch(/^cf_session=/);
  });

  it("records the client's address in the audit rows of failed and successful sign-ins", async () => {
    const client = `${net}.3`;
    expect((await signInFrom(client, wrong, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(401);
    const signedIn = await signInFrom(client, inject('adminToken'));
    expect(signedIn.status).toBe(200);

    const failed = (await api('GET', '/audit?action=session.sign_in_failed&limit=1000')).body.events;
    expect(failed.filter((e: any) => e.details?.address === client)).toEqual([expect.objectContaining({ actor: 'anonymous', target: 'studio' })]);
    const succeeded = (await api('GET', '/audit?action=session.sign_in&limit=1000')).body.events;
    const mine = succeeded.filter((e: any) => e.details?.address === client);
    expect(mine).toHaveLength(1);
    expect(mine[0].actor).toBe(`admin:session:${mine[0].target}`);
  });
});
