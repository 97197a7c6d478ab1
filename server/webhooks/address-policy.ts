// Which addresses a webhook may be delivered to. By default none of the server's own network: loopback, private,
// link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, multicast and reserved ranges are refused, so a
// tenant cannot make the server POST into the network it runs in (SSRF). Checked twice: on save, the URL's literal
// host (an IP in a refused range, or a localhost name); on every delivery, each address the host RESOLVES to, and the
// connection goes to the address that was checked (./send.ts passes resolveChecked as the socket's lookup), so a
// name that resolved to a public address on save and to 127.0.0.1 later (DNS rebinding) is refused too.
// An IPv6 address that carries an IPv4 address the network may translate or tunnel to (IPv4-compatible, mapped,
// SIIT, NAT64, 6to4) is judged by that IPv4 address: on an IPv6-only host behind NAT64, 64:ff9b::a9fe:a9fe IS
// 169.254.169.254. Teredo and local-use NAT64 are refused outright (where they embed the address varies; no public
// receiver lives there). A refusal a tenant can read never names the address a host resolved to (it would make the
// policy an oracle for the server's internal DNS); the server log has it.
// An operator allows private destinations for every tenant (CROWDFLOW_WEBHOOK_ALLOW_PRIVATE=1) or for one tenant
// (its limit webhookPrivateAddresses).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { tenantLimits } from '../limits/limits';
import type { Database } from '../storage/database';

type Range = { network: string; prefix: number; family: 'ipv4' | 'ipv6'; kind: string };

const REFUSED_RANGES: Range[] = [
  { network: '0.0.0.0', prefix: 8, family: 'ipv4', kind: '"this network"' },
  { network: '10.0.0.0', prefix: 8, family: 'ipv4', kind: 'private' },
  { network: '100.64.0.0', prefix: 10, family: 'ipv4', kind: 'carrier-grade NAT' },
  { network: '127.0.0.0', prefix: 8, family: 'ipv4', kind: 'loopback' },
  { network: '169.254.0.0', prefix: 16, family: 'ipv4', kind: 'link-local' },
  { network: '172.16.0.0', prefix: 12, family: 'ipv4', kind: 'private' },
  { network: '192.0.0.0', prefix: 24, family: 'ipv4', kind: 'IETF protocol assignment' },
  { network: '192.168.0.0', prefix: 16, family: 'ipv4', kind: 'private' },
  { network: '198.18.0.0', prefix: 15, family: 'ipv4', kind: 'benchmarking' },
  { network: '224.0.0.0', prefix: 4, family: 'ipv4', kind: 'multicast' },
  { network: '240.0.0.0', prefix: 4, family: 'ipv4', kind: 'reserved' },
  { network: '::', prefix: 128, family: 'ipv6', kind: 'unspecified' },
  { network: '::1', prefix: 128, family: 'ipv6', kind: 'loopback' },
  { network: 'fc00::', prefix: 7, family: 'ipv6', kind: 'unique local (private)' },
  { network: 'fe80::', prefix: 10, family: 'ipv6', kind: 'link-local' },
  { network: 'fec0::', prefix: 10, family: 'ipv6', kind: 'site-local' },
  { network: 'ff00::', prefix: 8, family: 'ipv6', kind: 'multicast' },
  { network: '100::', prefix: 64, family: 'ipv6', kind: 'discard-only' },
  { network: '2001::', prefix: 32, family: 'ipv6', kind: 'Teredo tunnel' },
  { network: '2001:db8::', prefix: 32, family: 'ipv6', kind: 'documentation' },
  { network: '64:ff9b:1::', prefix: 48, family: 'ipv6', kind: 'local-use NAT64' },
];

/**
 * IPv6 prefixes followed by an IPv4 address; `at` is the index of its first 16-bit word. IPv4-mapped (::ffff:0:0/96)
 * is not here: BlockList already matches it against the IPv4 ranges.
 */
const IPV4_EMBEDDINGS = [
  { network: '::', prefix: 96, at: 6, described: 'an IPv4-compatible address' },
  { network: '::ffff:0:0:0', prefix: 96, at: 6, described: 'an IPv4-translated (SIIT) address' },
  { network: '64:ff9b::', prefix: 96, at: 6, described: 'a NAT64 address' },
  { network: '2002::', prefix: 16, at: 1, described: 'a 6to4 address' },
].map((embedding) => {
  const list = new BlockList();
  list.addSubnet(embedding.network, embedding.prefix, 'ipv6');
  return { ...embedding, list };
});

// One list per range, so a refusal names the range. BlockList also matches IPv4-mapped IPv6 (::ffff:127.0.0.1)
// against the IPv4 ranges.
const RANGES = REFUSED_RANGES.map((range) => {
  const list = new BlockList();
  list.addSubnet(range.network, range.prefix, range.family);
  return { ...range, list };
});

export const PRIVATE_ADDRESSES_RULE =
  'webhook destinations may not be private, loopback, link-local or other internal addresses unless the operator allows them ' +
  '(CROWDFLOW_WEBHOOK_ALLOW_PRIVATE=1, or the tenant limit webhookPrivateAddresses)';

/**
 * Which refused range `address` (an IP) is in, e.g. "a loopback address (127.0.0.0/8)" or "a link-local address
 * (169.254.0.0/16) in a NAT64 address (64:ff9b::/96)", or null when it may be delivered to.
 */
export function refusedRange(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return null;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const range = RANGES.find((r) => r.list.check(address, type));
  if (range) return `a ${range.kind} address (${range.network}/${range.prefix})`;
  if (family === 4) return null;
  const embedding = IPV4_EMBEDDINGS.find((e) => e.list.check(address, 'ipv6'));
  if (!embedding) return null;
  const words = ipv6Words(address);
  const ipv4 = [words[embedding.at] >> 8, words[embedding.at] & 0xff, words[embedding.at + 1] >> 8, words[embedding.at + 1] & 0xff].join('.');
  const inner = refusedRange(ipv4);
  return inner ? `${inner} in ${embedding.described} (${embedding.network}/${embedding.prefix})` : null;
}

/** The eight 16-bit words of a valid IPv6 address (any zone id dropped, a dotted IPv4 tail counted as two words). */
function ipv6Words(address: string): number[] {
  const words = (part: string) =>
    part === ''
      ? []
      : part.split(':').flatMap((word) => {
          if (!word.includes('.')) return [parseInt(word, 16)];
          const [a, b, c, d] = word.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head, tail] = address.replace(/%.*$/, '').split('::');
  if (tail === undefined) return words(head);
  const [first, last] = [words(head), words(tail)];
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** `localhost` and every name under it (RFC 6761), with or without the final dot. */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** The URL's host without IPv6 brackets. */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** Why the literal host of `url` is refused (an IP in a refused range, or a localhost name), or null. */
export function refusedLiteralHost(url: URL): string | null {
  const host = urlHost(url);
  if (isLocalhostName(host)) return `${host} names this machine (localhost)`;
  const range = refusedRange(host);
  return range ? `${host} is ${range}` : null;
}

/** Whether this tenant's webhooks may reach private addresses: all may when `forEveryTenant` (the operator's
 * CROWDFLOW_WEBHOOK_ALLOW_PRIVATE), else by the tenant's limit. */
export async function privateAddressesAllowed(database: Database, tenantId: string, forEveryTenant: boolean): Promise<boolean> {
  if (forEveryTenant) return true;
  return (await tenantLimits(database, tenantId)).webhookPrivateAddresses;
}

/** A delivery refused by this policy: not worth retrying (the runner fails it at once, ./deliveries.ts). */
export class RefusedAddressError extends Error {
  /** `reason` is shown to the tenant; `resolvedAddress` (what the host resolved to) only goes to the server log. */
  constructor(
    reason: string,
    readonly resolvedAddress: string | null = null,
  ) {
    super(`refused: ${reason}; ${PRIVATE_ADDRESSES_RULE}`);
    this.name = 'RefusedAddressError';
  }
}

export type Resolver = (host: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A socket `lookup` that resolves the host, refuses it when ANY of its addresses is refused, and otherwise hands the
 * socket exactly the addresses it checked (so no second resolution can answer differently).
 */
export function checkedLookup(resolver: Resolver, { refusePrivate }: { refusePrivate: boolean }) {
  return (host: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolver(host).then(
      (addresses) => {
        const refused = refusePrivate ? addresses.find((a) => refusedRange(a.address) !== null) : undefined;
        if (refused) {
          const reason = `${host} resolves to ${refusedRange(refused.address)}`;
          return callback(Object.assign(new RefusedAddressError(reason, refused.address), { code: 'EREFUSEDADDRESS' }), []);
        }
        if (addresses.length === 0) return callback(Object.assign(new Error(`${host} resolves to no address`), { code: 'ENOTFOUND' }), []);
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}
