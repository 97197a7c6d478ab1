import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../server/clock';
import { AppError } from '../../server/errors';
import { route } from '../../server/http/respond';
import { clientAddress, PEER_ADDRESS_HEADER, throttleKeyOf } from '../../server/security/client-address';
import { SIGN_IN_LIMITS, SignInThrottle } from '../../server/security/sign-in-throttle';

// The sign-in throttle's window, its account-wide limit and the client address it counts, on an injected clock.

function refusal(check: () => void): { message: string; retryAfterSeconds: number } | null {
  try {
    check();
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('rate_limited');
    return { message: (error as AppError).message, retryAfterSeconds: ((error as AppError).details as { retryAfterSeconds: number }).retryAfterSeconds };
  }
}

describe('SignInThrottle', () => {
  it('refuses an address after 10 failures until the window has refilled an attempt; a success starts it afresh', async () => {
    const clock = new ManualClock();
    const throttle = new SignInThrottle(SIGN_IN_LIMITS, clock);
    for (let i = 0; i < 10; i++) {
      expect(refusal(() => throttle.check('198.51.100.1'))).toBeNull();
      throttle.failed('198.51.100.1');
    }
    expect(refusal(() => throttle.check('198.51.100.1'))).toEqual({
      message: expect.stringMatching(/from this address \(10 within 15 min\)/),
      retryAfterSeconds: 90,
    });
    expect(refusal(() => throttle.check('198.51.100.2'))).toBeNull();

    await clock.advance(60_000);
    expect(refusal(() => throttle.check('198.51.100.1'))?.retryAfterSeconds).toBe(30);
    await clock.advance(30_000);
    expect(refusal(() => throttle.check('198.51.100.1'))).toBeNull();
    throttle.failed('198.51.100.1');
    expect(refusal(() => throttle.check('198.51.100.1'))?.retryAfterSeconds).toBe(90);

    throttle.succeeded('198.51.100.1');
    expect(refusal(() => throttle.check('198.51.100.1'))).toBeNull();
  });

  it('refuses every address once 100 failures came from anywhere within the window', async () => {
    const clock = new ManualClock();
    const throttle = new SignInThrottle(SIGN_IN_LIMITS, clock);
    for (let i = 0; i < 100; i++) throttle.failed(`198.51.100.${i}`);
    expect(refusal(() => throttle.check('203.0.113.1'))).toEqual({ message: expect.stringMatching(/from all addresses together/), retryAfterSeconds: 9 });
    await clock.advance(9_000);
    expect(refusal(() => throttle.check('203.0.113.1'))).toBeNull();
  });
});

describe('clientAddress', () => {
  const from = (peer: string | null, forwardedFor?: string) =>
    new Request('http://localhost/api/v1/session', {
      headers: { ...(peer === null ? {} : { [PEER_ADDRESS_HEADER]: peer }), ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    });

  it('is the peer, X-Forwarded-For only through a trusted proxy (its rightmost untrusted entry)', () => {
    const proxies = new Set(['10.0.0.5', '10.0.0.6']);
    expect(clientAddress(from('::ffff:192.0.2.4', '203.0.113.9'), proxies)).toBe('192.0.2.4');
    expect(clientAddress(from('10.0.0.5', '198.51.100.1, 203.0.113.9, 10.0.0.6'), proxies)).toBe('203.0.113.9');
    expect(clientAddress(from('10.0.0.5', 'not-an-address'), proxies)).toBe('10.0.0.5');
    expect(clientAddress(from(null, '203.0.113.9'), proxies)).toBe('unknown');
  });

  it('counts an IPv6 client by its /64', () => {
    expect(throttleKeyOf('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64');
    expect(throttleKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(throttleKeyOf('192.0.2.4')).toBe('192.0.2.4');
  });
});

describe('a client abort', () => {
  afterEach(() => vi.restoreAllMocks());

  function abortedBody(error: Error): Request {
    const body = new ReadableStream({ pull: (controller) => controller.error(error) });
    return new Request('http://localhost/api/v1/session', { method: 'POST', body, duplex: 'half' } as RequestInit);
  }
  const readsBody = route(async (request) => new Response(await request.text()));

  it('is logged as an abort, not an unexpected error', async () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const response = await readsBody(abortedBody(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })), { params: Promise.resolve({}) });
    expect(response.status).toBe(499);
    expect(error).not.toHaveBeenCalled();
    expect(info).toHaveBeenCalledWith(expect.stringMatching(/client aborted POST \/api\/v1\/session/));

    const controller = new AbortController();
    controller.abort();
    const signalled = route(async (request) => {
      request.signal.throwIfAborted();
      return new Response('');
    });
    const request = new Request('http://localhost/api/v1/session', { signal: controller.signal });
    expect((await signalled(request, { params: Promise.resolve({}) })).status).toBe(499);
    expect(error).not.toHaveBeenCalled();
  });

  // A reset socket is what a lost database connection throws too, so the one classification of storage errors
  // (server/storage/transient.ts, issue 36 §3) answers it 503 with Retry-After: transient, never logged as an abort.
  it('is told apart from a reset socket elsewhere, which is a transient 503, not an abort', async () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const response = await readsBody(abortedBody(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), { params: Promise.resolve({}) });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(warn).toHaveBeenCalledWith('[crowdflow] a request met a transient storage error:', expect.anything());
    expect(info).not.toHaveBeenCalledWith(expect.stringMatching(/client aborted/));
  });
});
