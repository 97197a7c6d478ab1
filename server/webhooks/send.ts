// One outbound POST of a delivery. Bounded on every side: only http and https URLs (checked when the destination is
// saved), redirects are not followed (a 3xx is a failed attempt, so a receiver cannot bounce us elsewhere), the
// whole exchange is aborted after the destination's timeout, and at most RESPONSE_EXCERPT_BYTES of the answer are
// read before the rest is discarded. It is all non-blocking I/O on the request thread; the engine thread never waits.
import { DELIVERY_ID_HEADER, SIGNATURE_HEADER, signatureHeader } from './signing';

export const RESPONSE_EXCERPT_BYTES = 1024;
const USER_AGENT = 'Crowdflow-Webhooks/1';

export type SendTarget = { url: string; secret: string; headers: Record<string, string>; timeoutMs: number };
export type SendResult = { ok: boolean; status: number | null; error: string | null };

export async function sendDelivery(target: SendTarget, deliveryId: string, body: string, nowMs: number): Promise<SendResult> {
  const headers = {
    ...target.headers,
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    [DELIVERY_ID_HEADER]: deliveryId,
    [SIGNATURE_HEADER]: signatureHeader(target.secret, body, nowMs),
  };
  const signal = AbortSignal.timeout(target.timeoutMs);
  try {
    const response = await fetch(target.url, { method: 'POST', headers, body, redirect: 'manual', signal });
    const excerpt = await readExcerpt(response);
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status, error: null };
    return { ok: false, status: response.status, error: `HTTP ${response.status}${excerpt ? `: ${excerpt}` : ''}` };
  } catch (error) {
    if (signal.aborted) return { ok: false, status: null, error: `no answer within ${target.timeoutMs} ms` };
    return { ok: false, status: null, error: describe(error) };
  }
}

/** Reads up to RESPONSE_EXCERPT_BYTES of the answer, then cancels the stream (the connection may be reused or dropped). */
async function readExcerpt(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_EXCERPT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 200);
}

function describe(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error instanceof Error ? error.message : String(error)}${cause}`.slice(0, 300);
}
