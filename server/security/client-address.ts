// The address a request came from, for sign-in throttling and the audit trail. Our HTTP server (server/http/
// http-server.ts) stamps the socket's peer address on every request in PEER_ADDRESS_HEADER, replacing any value a
// client sent: Next.js fills X-Forwarded-For only when the client did not send one, so that header alone would let a
// guesser name a new address with every attempt. X-Forwarded-For is read only when the peer is one of
// CROWDFLOW_TRUSTED_PROXIES; then the client is its rightmost entry that is not a trusted proxy.
import { isIP } from 'node:net';

export const PEER_ADDRESS_HEADER = 'x-crowdflow-peer-address';

/** `::ffff:127.0.0.1` (an IPv4 client of a dual-stack socket) is 127.0.0.1; other addresses are kept as written. */
function canonical(address: string): string {
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed);
  return (mapped ? mapped[1] : trimmed).toLowerCase();
}

/** The proxies of CROWDFLOW_TRUSTED_PROXIES, as clientAddress() compares them. */
export function trustedProxies(addresses: readonly string[]): ReadonlySet<string> {
  return new Set(addresses.map(canonical));
}

/** The client's address, or 'unknown' when the request did not come through our server (it always does in production). */
export function clientAddress(request: Request, trusted: ReadonlySet<string>): string {
  const peer = request.headers.get(PEER_ADDRESS_HEADER);
  if (!peer) return 'unknown';
  let address = canonical(peer);
  if (!trusted.has(address)) return address;
  const forwarded = (request.headers.get('x-forwarded-for') ?? '').split(',').map(canonical).filter(Boolean);
  for (let i = forwarded.length - 1; i >= 0; i--) {
    address = forwarded[i];
    if (!trusted.has(address)) break;
  }
  return isIP(address) ? address : canonical(peer);
}

/**
 * The key a throttle counts an address under: an IPv6 client holds a whole /64 (one host can use any address in it),
 * so IPv6 addresses count by their first four groups.
 */
export function throttleKeyOf(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head, tail = ''] = address.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups] : headGroups;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
