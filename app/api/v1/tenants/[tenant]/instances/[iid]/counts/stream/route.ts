import { getEngine, type Counts } from '@/server/engine';
import { route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

const HEARTBEAT_MS = 15_000;

/**
 * Server-Sent Events: `event: counts` with the counts JSON at once and after every change, a comment every 15 s
 * so proxies keep the connection open. The engine subscription and the timer end when the client goes away.
 */
export const GET = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const engine = getEngine();
  await engine.getCounts(tenant.id, params.iid); // an unknown instance is a 404 before the stream opens
  const encoder = new TextEncoder();
  let close = () => {};
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      let open = true;
      const write = (text: string) => {
        if (open) controller.enqueue(encoder.encode(text));
      };
      const send = (counts: Counts) => write(`event: counts\ndata: ${JSON.stringify(counts)}\n\n`);
      // Subscribe first and hold changes back until the current counts are out: nothing is missed and
      // nothing older is sent after something newer.
      let held: Counts[] | undefined = [];
      const unsubscribe = engine.subscribeCounts(params.iid, (counts) => (held ? held.push(counts) : send(counts)));
      const heartbeat = setInterval(() => write(': heartbeat\n\n'), HEARTBEAT_MS);
      close = () => {
        if (!open) return;
        open = false;
        clearInterval(heartbeat);
        unsubscribe();
        request.signal.removeEventListener('abort', close);
        try {
          controller.close();
        } catch {
          // already closed by the runtime after a disconnect
        }
      };
      request.signal.addEventListener('abort', close);
      try {
        send(await engine.getCounts(tenant.id, params.iid));
        for (const counts of held) send(counts);
        held = undefined;
      } catch {
        close(); // the instance went away between the check and the first counts
      }
    },
    cancel() {
      close();
    },
  });
  return new Response(stream, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
  });
});
