// One outbound POST of a delivery. Bounded on every side: only http and https URLs (checked when the destination is
// saved), only addresses ./address-policy.ts allows (checked on the resolved address the socket connects to),
// redirects are not followed (a 3xx is a failed attempt, so a receiver cannot bounce us elsewhere), the whole exchange
// is aborted after the destination's timeout, and at most RESPONSE_EXCERPT_BYTES of the answer are read before the
// connection is dropped. node:http rather than fetch: its `lookup` option lets the connection use exactly the
// addresses that were checked. It is all non-blocking I/O on the request thread; the engine thread never waits.
import http from 'node:http';
import https from 'node:https';
import { checkedLookup, RefusedAddressError, refusedRange, systemResolver, urlHost, type Resolver } from './address-policy';
import { DELIVERY_ID_HEADER, SIGNATURE_HEADER, signatureHeader } from './signing';

export const RESPONSE_EXCERPT_BYTES = 1024;
const USER_AGENT = 'Crowdflow-Webhooks/1';

export type SendTarget = { url: string; secret: string; headers: Record<string, string>; timeoutMs: number };
/**
 * `error` is ours (status line, timeout, refusal, connection error); `response` is the start of the receiver's answer
 * to a non-2xx, which only admins see (it may echo what the request carried). `refusedAddress` is the internal
 * address a refused host resolved to: for the server log only, never stored where a tenant reads.
 */
export type SendResult = {
  ok: boolean;
  status: number | null;
  error: string | null;
  response: string | null;
  refused: boolean;
  refusedAddress?: string;
};
export type SendPolicy = { allowPrivate: boolean; agents: DeliveryAgents; resolver?: Resolver };

/**
 * The kept-alive connections of one app's deliveries (made with its `webhook.deliver` type). Separate pools: a
 * connection opened for a tenant allowed private addresses must never carry a request of a tenant that is not (it
 * would skip the check, which runs when a connection is opened).
 */
export class DeliveryAgents {
  private readonly checked = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  private readonly unchecked = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  pool(allowPrivate: boolean): { http: http.Agent; https: https.Agent } {
    return allowPrivate ? this.unchecked : this.checked;
  }

  /**
   * Ends the idle kept-alive connections (a request in flight keeps its own); the pools stay usable and open new ones
   * for the next delivery.
   */
  close(): void {
    for (const pools of [this.checked, this.unchecked])
      for (const agent of [pools.http, pools.https]) for (const idle of Object.values(agent.freeSockets)) for (const socket of idle ?? []) socket.destroy();
  }
}

export async function sendDelivery(target: SendTarget, deliveryId: string, body: string, nowMs: number, policy: SendPolicy): Promise<SendResult> {
  const url = new URL(target.url);
  // An IP literal is connected to without a lookup, so it is checked here.
  const literalRange = policy.allowPrivate ? null : refusedRange(urlHost(url));
  if (literalRange) return refusal(new RefusedAddressError(`${urlHost(url)} is ${literalRange}`));
  const headers = {
    ...target.headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': USER_AGENT,
    [DELIVERY_ID_HEADER]: deliveryId,
    [SIGNATURE_HEADER]: signatureHeader(target.secret, body, nowMs),
  };
  const signal = AbortSignal.timeout(target.timeoutMs);
  const secure = url.protocol === 'https:';
  const pool = policy.agents.pool(policy.allowPrivate);
  try {
    const { status, excerpt } = await post(
      url,
      {
        method: 'POST',
        headers,
        signal,
        agent: secure ? pool.https : pool.http,
        ...(policy.allowPrivate && !policy.resolver
          ? {}
          : { lookup: checkedLookup(policy.resolver ?? systemResolver, { refusePrivate: !policy.allowPrivate }) }),
      },
      body,
      secure,
    );
    if (status >= 200 && status < 300) return { ok: true, status, error: null, response: null, refused: false };
    return { ok: false, status, error: `HTTP ${status}`, response: excerpt || null, refused: false };
  } catch (error) {
    if (error instanceof RefusedAddressError) return refusal(error);
    if (signal.aborted) return { ok: false, status: null, error: `no answer within ${target.timeoutMs} ms`, response: null, refused: false };
    return { ok: false, status: null, error: describe(error), response: null, refused: false };
  }
}

function refusal(error: RefusedAddressError): SendResult {
  const result: SendResult = { ok: false, status: null, error: error.message, response: null, refused: true };
  return error.resolvedAddress === null ? result : { ...result, refusedAddress: error.resolvedAddress };
}

/** Sends the request; resolves with the status and up to RESPONSE_EXCERPT_BYTES of the answer. */
function post(url: URL, options: http.RequestOptions, body: string, secure: boolean): Promise<{ status: number; excerpt: string }> {
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(url, options, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => resolve({ status: response.statusCode ?? 0, excerpt: excerptOf(chunks) });
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.byteLength;
        // Enough read: drop the connection rather than read (or keep alive) the rest of a long answer.
        if (size >= RESPONSE_EXCERPT_BYTES) {
          response.destroy();
          finish();
        }
      });
      response.on('end', finish);
      response.on('error', reject);
    });
    // A refusal from the lookup arrives here as the RefusedAddressError it threw.
    request.on('error', reject);
    request.end(body);
  });
}

function excerptOf(chunks: Buffer[]): string {
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 200);
}

function describe(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error instanceof Error ? error.message : String(error)}${cause}`.slice(0, 300);
}
