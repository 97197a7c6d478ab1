import { afterEach, describe, expect, it } from 'vitest';
import { refusedLiteralHost, refusedRange, type Resolver } from '../../server/webhooks/address-policy';
import { DeliveryAgents, sendDelivery, type SendTarget } from '../../server/webhooks/send';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';

// Which addresses a webhook may reach, checked on the URL when it is saved and on the resolved address when it is sent.

const SECRET = 'whsec_policy-test-secret-0123';
const receivers: Receiver[] = [];
/** The test's own connection pools, as an app's `webhook.deliver` type holds them. */
const agents = new DeliveryAgents();

afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

async function receiver(): Promise<Receiver> {
  const started = await startReceiver({ secret: SECRET, now: () => Date.now(), seed: 1 });
  receivers.push(started);
  return started;
}

/** A resolver that knows one name, as a DNS server rebinding it to this machine would answer. */
const resolving =
  (name: string, ...addresses: string[]): Resolver =>
  async (host) => {
    if (host !== name) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

/** The receiver's URL with its 127.0.0.1 replaced by `host`. */
function target(hook: Receiver, host: string): SendTarget {
  return { url: hook.url.replace('127.0.0.1', host), secret: SECRET, headers: {}, timeoutMs: 5_000 };
}

describe('webhook address policy', () => {
  it('names the range of every internal address and lets public ones through', () => {
    const refused: [string, RegExp][] = [
      ['127.0.0.1', /loopback .*127\.0\.0\.0\/8/],
      ['127.45.6.7', /loopback/],
      ['10.1.2.3', /private/],
      ['172.16.0.1', /private/],
      ['172.31.255.255', /private/],
      ['192.168.1.1', /private/],
      ['169.254.169.254', /link-local/],
      ['100.64.0.1', /carrier-grade NAT/],
      ['0.0.0.0', /this network/],
      ['224.0.0.1', /multicast/],
      ['::1', /loopback/],
      ['::', /unspecified/],
      ['fe80::1', /link-local/],
      ['fd00::1', /unique local/],
      ['::ffff:127.0.0.1', /loopback/],
      ['::ffff:a9fe:a9fe', /link-local/],
      // IPv6 forms that carry an IPv4 address a translator or tunnel delivers to are judged by that address.
      ['::7f00:1', /^a loopback address \(127\.0\.0\.0\/8\) in an IPv4-compatible address \(::\/96\)$/],
      ['::10.1.2.3', /^a private address .* in an IPv4-compatible/],
      ['::ffff:0:7f00:1', /^a loopback address .* in an IPv4-translated \(SIIT\) address \(::ffff:0:0:0\/96\)$/],
      ['64:ff9b::a9fe:a9fe', /^a link-local address \(169\.254\.0\.0\/16\) in a NAT64 address \(64:ff9b::\/96\)$/],
      ['64:ff9b::192.168.0.1', /^a private address .* in a NAT64/],
      ['2002:7f00:1::1', /^a loopback address .* in a 6to4 address \(2002::\/16\)$/],
      ['2002:a9fe:a9fe:1:2:3:4:5', /^a link-local address .* in a 6to4/],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /^a Teredo tunnel address \(2001::\/32\)$/],
      ['64:ff9b:1::a9fe:a9fe', /^a local-use NAT64 address \(64:ff9b:1::\/48\)$/],
      ['100::1', /discard-only/],
      ['2001:db8::1', /documentation/],
    ];
    for (const [address, reason] of refused) expect(refusedRange(address), address).toMatch(reason);
    // The same forms around a public IPv4 address (8.8.8.8 = 0808:0808) are let through.
    const publicAddresses = ['8.8.8.8', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700::1111', 'example.com'];
    for (const address of [...publicAddresses, '::808:808', '::ffff:0:808:808', '64:ff9b::8.8.8.8', '2002:808:808::1', '::ffff:8.8.8.8']) {
      expect(refusedRange(address), address).toBeNull();
    }
  });

  it('refuses literal internal hosts in every spelling the URL parser accepts, and localhost names', () => {
    const reason = (url: string) => refusedLiteralHost(new URL(url));
    expect(reason('http://127.0.0.1:8080/hook')).toBe('127.0.0.1 is a loopback address (127.0.0.0/8)');
    // The WHATWG parser normalises decimal, hex and short forms to the dotted address before we look.
    expect(reason('http://2130706433/')).toMatch(/^127\.0\.0\.1 is a loopback/);
    expect(reason('http://0x7f.1/')).toMatch(/^127\.0\.0\.1 is a loopback/);
    expect(reason('http://[::1]/')).toMatch(/^::1 is a loopback/);
    expect(reason('http://[::ffff:169.254.169.254]/latest/meta-data')).toMatch(/link-local/);
    expect(reason('http://[::127.0.0.1]/')).toMatch(/^::7f00:1 is a loopback address .* in an IPv4-compatible address/);
    expect(reason('http://[::ffff:0:127.0.0.1]/')).toMatch(/^::ffff:0:7f00:1 is a loopback address .* in an IPv4-translated/);
    expect(reason('http://[64:ff9b::169.254.169.254]/latest/meta-data')).toMatch(/^64:ff9b::a9fe:a9fe is a link-local address .* in a NAT64/);
    expect(reason('http://[64:ff9b:1::a9fe:a9fe]/')).toMatch(/^64:ff9b:1::a9fe:a9fe is a local-use NAT64 address/);
    expect(reason('http://[2002:7f00:1::]/')).toMatch(/^2002:7f00:1:: is a loopback address .* in a 6to4/);
    expect(reason('http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/')).toMatch(/is a Teredo tunnel address/);
    expect(reason('http://localhost:3000/')).toBe('localhost names this machine (localhost)');
    expect(reason('http://LocalHost./')).toMatch(/names this machine/);
    expect(reason('http://api.localhost/')).toMatch(/names this machine/);
    expect(reason('https://hooks.example.com/in')).toBeNull();
    expect(reason('https://localhost.example.com/in')).toBeNull();
  });

  it('refuses a host that resolves to 127.0.0.1 at delivery time: no request is made, the reason omits the address', async () => {
    const hook = await receiver();
    const result = await sendDelivery(target(hook, 'hooks.example'), 'd-1', '{"a":1}', Date.now(), {
      allowPrivate: false,
      agents,
      resolver: resolving('hooks.example', '127.0.0.1'),
    });
    expect(result).toMatchObject({ ok: false, status: null, refused: true, refusedAddress: '127.0.0.1' });
    // The error is stored where tenant keys read it: it names the rule, never the internal address DNS answered.
    expect(result.error).toMatch(/^refused: hooks\.example resolves to a loopback address \(127\.0\.0\.0\/8\); .*CROWDFLOW_WEBHOOK_ALLOW_PRIVATE/);
    expect(result.error).not.toContain('127.0.0.1');
    expect(hook.received).toHaveLength(0);
  });

  it('refuses a host whose AAAA answer carries an internal IPv4 address (compatible, SIIT, NAT64, 6to4) or is Teredo', async () => {
    const hook = await receiver();
    const answers: [string, RegExp][] = [
      ['::7f00:1', /resolves to a loopback address \(127\.0\.0\.0\/8\) in an IPv4-compatible address/],
      ['::ffff:0:a00:7', /resolves to a private address \(10\.0\.0\.0\/8\) in an IPv4-translated/],
      ['64:ff9b::a9fe:a9fe', /resolves to a link-local address \(169\.254\.0\.0\/16\) in a NAT64 address/],
      ['64:ff9b:1::a9fe:a9fe', /resolves to a local-use NAT64 address/],
      ['2002:c0a8:101::1', /resolves to a private address \(192\.168\.0\.0\/16\) in a 6to4 address/],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /resolves to a Teredo tunnel address/],
    ];
    for (const [address, reason] of answers) {
      const result = await sendDelivery(target(hook, 'hooks.example'), `d-${address}`, '{}', Date.now(), {
        allowPrivate: false,
        agents,
        resolver: resolving('hooks.example', address),
      });
      expect(result, address).toMatchObject({ refused: true, refusedAddress: address, error: expect.stringMatching(reason) });
      expect(result.error, address).not.toContain(address);
    }
    expect(hook.received).toHaveLength(0);
  });

  it('refuses a host when any one of its addresses is internal, and an IP literal without a lookup', async () => {
    const hook = await receiver();
    const mixed = await sendDelivery(target(hook, 'hooks.example'), 'd-2', '{}', Date.now(), {
      allowPrivate: false,
      agents,
      resolver: resolving('hooks.example', '93.184.215.14', '10.0.0.7'),
    });
    expect(mixed).toMatchObject({ refusedAddress: '10.0.0.7', error: expect.stringMatching(/resolves to a private address \(10\.0\.0\.0\/8\)/) });
    expect(mixed.error).not.toContain('10.0.0.7');
    const literal = await sendDelivery(target(hook, '127.0.0.1'), 'd-3', '{}', Date.now(), { allowPrivate: false, agents });
    expect(literal).toMatchObject({ refused: true, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback/) });
    expect(hook.received).toHaveLength(0);
  });

  it('when allowed, connects to exactly the address the name resolved to', async () => {
    const hook = await receiver();
    // hooks.example exists only in this resolver: reaching the receiver proves the socket used the checked address.
    const result = await sendDelivery(target(hook, 'hooks.example'), 'd-4', '{"a":1}', Date.now(), {
      allowPrivate: true,
      agents,
      resolver: resolving('hooks.example', '127.0.0.1'),
    });
    expect(result).toMatchObject({ ok: true, status: 200, refused: false });
    expect(hook.received.map((r) => [r.id, r.body, r.verified])).toEqual([['d-4', '{"a":1}', true]]);
  });

  it('keeps a delivery’s connection alive for the next one until the agents close, then ends it', async () => {
    const hook = await receiver();
    const own = new DeliveryAgents();
    for (const id of ['d-6', 'd-7'])
      expect(await sendDelivery(target(hook, '127.0.0.1'), id, '{}', Date.now(), { allowPrivate: true, agents: own })).toMatchObject({ ok: true });
    expect(Object.values(own.pool(true).http.freeSockets).flat()).toHaveLength(1);
    own.close();
    await hook.connectionsClosed();
    expect(Object.values(own.pool(true).http.freeSockets).flat()).toHaveLength(0);
    expect(await sendDelivery(target(hook, '127.0.0.1'), 'd-8', '{}', Date.now(), { allowPrivate: true, agents: own })).toMatchObject({ ok: true });
    own.close();
  });

  it('keeps the receiver’s answer to a failure apart from our error text', async () => {
    const hook = await receiver();
    hook.setMix({ fail: 1, hang: 0, slow: 0 });
    const result = await sendDelivery(target(hook, '127.0.0.1'), 'd-5', '{}', Date.now(), { allowPrivate: true, agents });
    expect(result).toEqual({ ok: false, status: 500, error: 'HTTP 500', response: 'receiver failed on purpose', refused: false });
  });
});
