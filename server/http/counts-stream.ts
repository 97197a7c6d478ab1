import type { Counts } from '../engine';
import { AppError } from '../errors';
import { countsBody, deliveryCounts, type DeliveryCounts } from './counts-route';
import type { Caller } from './request-context';

const HEARTBEAT_MS = 15_000;
/** How often a stream reads the deliveries frequency caps skipped and quiet hours held (the webhook pump, not the engine, records them). */
const DELIVERY_COUNTS_EVERY_MS = 2_000;

/**
 * Server-Sent Events: `event: counts` with the counts JSON at once and after every change, a comment every 15 s
 * so proxies keep the connection open. The engine subscription and the timer end when the client goes away.
 * The stream ends when the server stops. The caller has checked that the instance exists and belongs to the tenant.
 */
export function countsEventStream(
  { request, engine, database, onShutdown }: Pick<Caller, 'request' | 'engine' | 'database' | 'onShutdown'>,
  tenantId: string,
  instanceId: string,
): Response {
  const encoder = new TextEncoder();
  let close = () => {};
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      let open = true;
      const write = (text: string) => {
        if (open) controller.enqueue(encoder.encode(text));
      };
      // The counts as last sent, and what frequency caps skipped and quiet hours held per step as last read: merged
      // into every push, and a change of those alone sends the last counts again.
      let last: Counts | undefined;
      let delivery: DeliveryCounts = {};
      const send = (counts: Counts) => {
        last = counts;
        write(`event: counts\ndata: ${JSON.stringify(countsBody(counts, delivery))}\n\n`);
      };
      const readDeliveryCounts = async () => {
        const now = await deliveryCounts(database, tenantId, instanceId);
        const changed = JSON.stringify(now) !== JSON.stringify(delivery);
        delivery = now;
        if (changed && last) send(last);
      };
      let deliveryTimer: ReturnType<typeof setInterval> | undefined;
      // Subscribe first and hold changes back until the current counts are out: nothing is missed and
      // nothing older is sent after something newer.
      let held: Counts[] | undefined = [];
      const unsubscribe = engine.subscribeCounts(instanceId, (counts) => (held ? held.push(counts) : send(counts)));
      const heartbeat = setInterval(() => write(': heartbeat\n\n'), HEARTBEAT_MS);
      close = () => {
        if (!open) return;
        open = false;
        clearInterval(heartbeat);
        clearInterval(deliveryTimer);
        unsubscribe();
        forgetOnShutdown();
        request.signal.removeEventListener('abort', close);
        try {
          controller.close();
        } catch {
          // already closed by the runtime after a disconnect
        }
      };
      request.signal.addEventListener('abort', close);
      const forgetOnShutdown = onShutdown(() => close());
      await readDeliveryCounts().catch(() => undefined);
      if (open) deliveryTimer = setInterval(() => void readDeliveryCounts().catch(() => undefined), DELIVERY_COUNTS_EVERY_MS);
      try {
        send(await engine.getCounts(tenantId, instanceId));
      } catch (error) {
        // A partition moving between cluster members: the first counts follow once its new owner publishes them.
        if (!(error instanceof AppError && (error.code === 'partition_moving' || error.code === 'partition_recovering'))) return close(); // the instance went away
      }
      for (const counts of held) send(counts);
      held = undefined;
    },
    cancel() {
      close();
    },
  });
  return new Response(stream, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
  });
}
