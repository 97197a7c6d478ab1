// Delivery signatures, in the scheme Stripe documents: the header `Crowdflow-Signature: t=<unix seconds>,v1=<hex>`
// where v1 is HMAC-SHA256(secret, `${t}.${body}`). The timestamp is signed with the body, so a receiver that
// refuses timestamps older than its tolerance (5 minutes here) refuses a replayed request, and one that remembers
// the `Crowdflow-Delivery-Id` it processed refuses a retried one twice. During a secret rotation a sender may list
// several `v1=` values; a receiver accepts the request when any of them matches.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'crowdflow-signature';
export const DELIVERY_ID_HEADER = 'crowdflow-delivery-id';
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** A fresh signing secret: `whsec_` and 32 random bytes in base64url. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function mac(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The Crowdflow-Signature header value for `body` sent at `nowMs`. */
export function signatureHeader(secret: string, body: string, nowMs: number): string {
  const timestamp = Math.floor(nowMs / 1000);
  return `t=${timestamp},v1=${mac(secret, timestamp, body)}`;
}

export type Verification = { ok: true; timestamp: number } | { ok: false; reason: string };

/**
 * What a receiver does (and what the tests do as the receiver): parse the header, recompute the MAC over the raw
 * body bytes as received, compare in constant time, and refuse a timestamp outside the tolerance.
 */
export function verifySignature(
  secret: string,
  header: string | null | undefined,
  body: string,
  nowMs: number,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
): Verification {
  if (!header) return { ok: false, reason: 'no signature header' };
  const parts = header.split(',').map((part) => part.trim().split('='));
  const timestamp = Number(parts.find(([key]) => key === 't')?.[1]);
  const signatures = parts.filter(([key]) => key === 'v1').map(([, value]) => value ?? '');
  if (!Number.isSafeInteger(timestamp) || signatures.length === 0) return { ok: false, reason: 'malformed signature header' };
  if (Math.abs(Math.floor(nowMs / 1000) - timestamp) > toleranceSeconds) return { ok: false, reason: 'timestamp outside the tolerance (a replay?)' };
  const expected = Buffer.from(mac(secret, timestamp, body), 'hex');
  const matches = signatures.some((signature) => {
    const given = Buffer.from(signature, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? { ok: true, timestamp } : { ok: false, reason: 'signature mismatch' };
}
