// Sending deliveries through the durable procedure runner, and the delivery log (list, one delivery, replay).
//
// Each delivery round is one procedure `webhook.deliver` (id `webhook.deliver:<delivery id>:<round>`): one attempt
// per execute; a failed attempt (non-2xx, no answer within the timeout, a refused connection) is a RetryLaterError,
// which the runner retries with its exponential backoff (server/procedures/backoff.ts: 0.5 s doubling to 60 s, with
// jitter) up to MAX_RETRIES times; then the procedure's rollback marks the delivery failed. Delivery is at least
// once: a crash after the receiver answered and before the step committed sends again, under the same delivery id.
// A delivery to an address the policy refuses (./address-policy.ts) fails at once: retrying would not change it.
// A transient storage error (server/storage/transient.ts) is not an attempt: the runner retries it with its own
// backoff, the delivery stays pending and its attempts unchanged; a storage failure that sticks fails the delivery with
// the reason in lastError.
import { z } from 'zod';
import { AppError, notFound } from '../errors';
import { parseError } from '../procedures/store';
import {
  RetryLaterError,
  type Json,
  type ProcedureContext,
  type ProcedureRunner,
  type ProcedureStatus,
  type ProcedureTypeDefinition,
} from '../procedures/types';
import { privateAddressesAllowed } from './address-policy';
import { LOST_OFFSET } from './cut';
import { requireDestination } from './destinations';
import { DeliveryAgents, sendDelivery } from './send';
import type { Database } from '../storage/database';
import { isTransientStorageError, retryTransient } from '../storage/transient';
import type { Clock } from '../clock';
import { STORAGE_PATIENCE_MS } from '../procedures/turns';

export const DELIVER_TYPE = 'webhook.deliver';
/** Retries after the first attempt: with the runner's backoff about 10 minutes of trying before a delivery fails. */
export const MAX_RETRIES = 14;
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export const MAX_LOG_PAGE = 500;

export function deliveryProcedureId(deliveryId: string, replays: number): string {
  return `${DELIVER_TYPE}:${deliveryId}:${replays}`;
}

type DeliverState = { delivery: string; replays: number };

/** `webhook.deliver`, delivering to private addresses for every tenant when `privateAddressesForEveryTenant`. */
function deliverType(privateAddressesForEveryTenant: boolean): ProcedureTypeDefinition {
  const agents = new DeliveryAgents();
  return {
    type: DELIVER_TYPE,
    maxRetries: MAX_RETRIES,
    supportsRollback: true,
    close: () => agents.close(),
    create(state: Json) {
      const { delivery, replays } = state as DeliverState;
      return {
        lockKeys: () => [],
        state: () => ({ delivery, replays }),
        execute: (ctx: ProcedureContext) => attempt(ctx, delivery, replays, { privateAddressesForEveryTenant, agents }),
        // Out of retries, or a failure no retry cures: the delivery is failed (until a replay), unless a replay took it
        // over meanwhile, with the reason in lastError: the last attempt's, or what stopped the procedure before (storage).
        async rollback(ctx: ProcedureContext) {
          const lastError = await failureOf(ctx, delivery);
          await ctx.database.db.webhookDelivery.updateMany({
            where: { id: delivery, ...tenantOf(ctx), replays, status: 'pending' },
            data: { status: 'failed', ...(lastError === null ? {} : { lastError }) },
          });
          return { kind: 'rolled-back' as const };
        },
      };
    },
  };
}

/** The delivery's tenant: its procedure is submitted with it (submitDeliveries). */
function tenantOf(ctx: ProcedureContext): { tenantId?: string } {
  return ctx.tenantId === null ? {} : { tenantId: ctx.tenantId };
}

async function attempt(
  ctx: ProcedureContext,
  deliveryId: string,
  replays: number,
  sending: { privateAddressesForEveryTenant: boolean; agents: DeliveryAgents },
): Promise<ProcedureStatus> {
  const { database, clock } = ctx;
  const now = clock.now();
  const delivery = await database.db.webhookDelivery.findUnique({ where: { id: deliveryId, ...tenantOf(ctx) } });
  // Deleted with its destination, delivered already, or taken over by a replay: nothing left for this round.
  if (delivery?.status !== 'pending' || delivery.replays !== replays) return { kind: 'done', output: { skipped: true } };
  // Read apart rather than included: Prisma loads an included relation by its id alone.
  const destination = await database.db.webhookDestination.findUnique({ where: { id: delivery.destinationId, tenantId: delivery.tenantId } });
  if (!destination) return { kind: 'done', output: { skipped: true } };
  const headers = JSON.parse(destination.headers) as Record<string, string>;
  const result = await sendDelivery(
    { url: destination.url, secret: destination.secret, headers, timeoutMs: destination.timeoutMs },
    delivery.id,
    delivery.body,
    now,
    {
      allowPrivate: await privateAddressesAllowed(database, destination.tenantId, sending.privateAddressesForEveryTenant),
      agents: sending.agents,
    },
  );
  await recordAttempt(clock, () =>
    database.db.webhookDelivery.updateMany({
      where: { id: deliveryId, ...tenantOf(ctx), replays },
      data: {
        attempts: { increment: 1 },
        lastStatus: result.status,
        lastError: result.error,
        lastResponse: result.response,
        lastAttemptAt: new Date(now),
        ...(result.ok ? { status: 'delivered', deliveredAt: new Date(now) } : {}),
      },
    }),
  );
  if (result.refused) {
    const resolved = result.refusedAddress ? ` (resolved to ${result.refusedAddress})` : '';
    console.warn(`[webhooks] delivery ${deliveryId} to destination ${destination.name}${resolved} ${result.error}`);
    throw new Error(`delivery ${deliveryId}: ${result.error}`);
  }
  if (!result.ok) throw new RetryLaterError(`delivery ${deliveryId}: ${result.error}`);
  return { kind: 'done', output: { status: result.status } };
}

/**
 * Writes what the receiver answered. The request was made: handing a transient storage error to the runner would run
 * the step again and send the delivery a second time (the fault-injection suite saw it), so it is waited out here, in
 * pauses of 0.1 s doubling to 2 s on the runner's clock (short, so a stopping runner is not held up long), for up to
 * the runner's own patience with storage.
 */
async function recordAttempt(clock: Clock, write: () => Promise<unknown>): Promise<void> {
  const since = clock.now();
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      await write();
      return;
    } catch (error) {
      if (!isTransientStorageError(error) || clock.now() - since >= STORAGE_PATIENCE_MS) throw error;
    }
    await clock.sleep(pause);
  }
}

/** Why the delivery's procedure failed, without the `delivery <id>: ` of the attempt's own errors. */
async function failureOf(ctx: ProcedureContext, deliveryId: string): Promise<string | null> {
  const row = await ctx.database.db.procedure.findUnique({ where: { id: ctx.procedureId }, select: { error: true } });
  const message = parseError(row?.error ?? null)?.message;
  return message === undefined ? null : message.replace(`delivery ${deliveryId}: `, '').slice(0, 300);
}

/** Registers `webhook.deliver` with `runner` (once: the pump and a replay may both ask). */
export function registerWebhookProcedures(runner: ProcedureRunner, privateAddressesForEveryTenant: boolean): void {
  if (!runner.types.has(DELIVER_TYPE)) runner.types.register(deliverType(privateAddressesForEveryTenant));
}

/**
 * Submits one procedure per delivery round (`webhook.deliver` registered with `runner` first); submitting an existing
 * id is a no-op, so this may be repeated, and each goes again through a transient storage error: the round is
 * committed already, and a delivery left without its procedure waits for the next orphan sweep (a minute), which
 * under 5% of failing operations often failed itself.
 */
export async function submitDeliveries(runner: ProcedureRunner, deliveries: { id: string; replays: number }[], tenantId: string): Promise<void> {
  for (const { id, replays } of deliveries)
    await retryTransient(() => runner.submit(DELIVER_TYPE, { delivery: id, replays }, { id: deliveryProcedureId(id, replays), tenantId }));
}

/**
 * Pending deliveries whose procedure was never submitted (the process stopped between committing a round and
 * submitting it) are submitted now. Returns how many.
 */
export async function submitOrphans(database: Database, runner: ProcedureRunner): Promise<number> {
  let submitted = 0;
  let after = '';
  for (;;) {
    const pending = await database.db.webhookDelivery.findMany({
      where: { status: 'pending', id: { gt: after } },
      orderBy: { id: 'asc' },
      take: 500,
      select: { id: true, tenantId: true, replays: true },
    });
    if (pending.length === 0) return submitted;
    after = pending[pending.length - 1].id;
    const known = new Set(
      (await database.db.procedure.findMany({ where: { id: { in: pending.map((d) => deliveryProcedureId(d.id, d.replays)) } }, select: { id: true } })).map(
        (p) => p.id,
      ),
    );
    const orphans = pending.filter((d) => !known.has(deliveryProcedureId(d.id, d.replays)));
    for (const orphan of orphans) await submitDeliveries(runner, [orphan], orphan.tenantId);
    submitted += orphans.length;
  }
}

export const DeliveryListQuery = z.strictObject({
  status: z.enum(DELIVERY_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_LOG_PAGE).default(50),
  /** The `next` of the previous page: deliveries cut before it (newest first). */
  before: z
    .string()
    .regex(/^\d{1,19}\.-?\d{1,10}$/, 'before is the `next` of a previous page (<seq>.<offset>)')
    .optional(),
  tenant: z.string().min(1).optional(),
});

/**
 * Delivery ids are `<destination id>-<journal seq>-<user offset>`, `…-<watermark>-lost` for a lost report (./cut.ts),
 * or `…-<seq>-q<offset>` for users quiet hours held (./quiet-release.ts).
 */
export const DeliveryParams = z.object({
  id: z
    .string()
    .regex(/^wh_[0-9a-f]{16}-\d{1,19}-(\d{1,10}|lost|q\d{1,10})$/, 'a delivery id looks like wh_<16 hex digits>-<seq>-<offset> (or -lost, or -q<offset>)'),
});

export type DeliveryView = {
  id: string;
  /** `moves`: users who moved; `lost`: journal retention deleted moves with seq in (lost.after, lost.through] before they were cut. */
  type: 'moves' | 'lost';
  lost?: { after: number; through: number };
  status: (typeof DELIVERY_STATUSES)[number];
  users: number;
  attempts: number;
  replays: number;
  lastStatus: number | null;
  lastError: string | null;
  /** The start of the receiver's answer to the last failed attempt; only in admin views (it may echo credentials the request carried). */
  lastResponse?: string | null;
  lastAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
};

/** Whether the viewer sees receivers' answers: the admin (token or studio session), not a tenant's API keys. */
export type LogViewer = { admin: boolean };

type DeliveryRow = NonNullable<Awaited<ReturnType<typeof findDelivery>>>;

function deliveryView(row: Omit<DeliveryRow, 'body'>, viewer: LogViewer): DeliveryView {
  return {
    id: row.id,
    type: row.fromOffset === LOST_OFFSET ? 'lost' : 'moves',
    ...(row.lostAfter === null ? {} : { lost: { after: Number(row.lostAfter), through: Number(row.fromSeq) } }),
    status: row.status as DeliveryView['status'],
    users: row.users,
    attempts: row.attempts,
    replays: row.replays,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    ...(viewer.admin ? { lastResponse: row.lastResponse } : {}),
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

function findDelivery(database: Database, destination: { id: string; tenantId: string }, id: string) {
  return database.db.webhookDelivery.findFirst({ where: { id, tenantId: destination.tenantId, destinationId: destination.id } });
}

/** The destination's deliveries, newest first, without bodies; `next` continues with older ones (absent at the end). */
export async function listDeliveries(
  database: Database,
  tenantId: string,
  name: string,
  query: z.infer<typeof DeliveryListQuery>,
  viewer: LogViewer,
): Promise<{ deliveries: DeliveryView[]; next?: string }> {
  const destination = await requireDestination(database, tenantId, name);
  const [seq, offset] = query.before ? query.before.split('.').map(Number) : [undefined, undefined];
  const before = seq === undefined ? {} : { OR: [{ fromSeq: { lt: BigInt(seq) } }, { fromSeq: BigInt(seq), fromOffset: { lt: offset } }] };
  const rows = await database.db.webhookDelivery.findMany({
    where: { tenantId, destinationId: destination.id, ...(query.status ? { status: query.status } : {}), ...before },
    orderBy: [{ fromSeq: 'desc' }, { fromOffset: 'desc' }],
    take: query.limit,
    omit: { body: true },
  });
  const last = rows.at(-1);
  return {
    deliveries: rows.map((row) => deliveryView(row, viewer)),
    ...(rows.length === query.limit && last ? { next: `${last.fromSeq}.${last.fromOffset}` } : {}),
  };
}

/** One delivery with the exact body every attempt sends. */
export async function getDelivery(
  database: Database,
  tenantId: string,
  name: string,
  id: string,
  viewer: LogViewer,
): Promise<DeliveryView & { body: unknown }> {
  const destination = await requireDestination(database, tenantId, name);
  const row = await findDelivery(database, destination, id);
  if (!row) throw notFound(`Delivery id "${id}" of webhook destination "${name}"`);
  return { ...deliveryView(row, viewer), body: JSON.parse(row.body) as unknown };
}

/**
 * Sends a delivery again, same id and body (receivers de-duplicate on the id): a new round with fresh retries. A
 * delivery still pending is refused with 409 (its round is still trying).
 */
export async function replayDelivery(
  database: Database,
  runner: ProcedureRunner,
  tenantId: string,
  name: string,
  id: string,
  viewer: LogViewer,
  privateAddressesForEveryTenant = false,
): Promise<DeliveryView> {
  registerWebhookProcedures(runner, privateAddressesForEveryTenant);
  const destination = await requireDestination(database, tenantId, name);
  const row = await findDelivery(database, destination, id);
  if (!row) throw notFound(`Delivery id "${id}" of webhook destination "${name}"`);
  if (row.status === 'pending')
    throw new AppError('conflict', `Delivery "${id}" is still pending (attempt ${row.attempts}); replay it once it is delivered or failed`, {
      status: row.status,
    });
  const replays = row.replays + 1;
  const replayed = await database.db.webhookDelivery.updateMany({
    where: { id, tenantId, replays: row.replays, status: row.status },
    data: { status: 'pending', replays, attempts: 0 },
  });
  if (replayed.count !== 1) throw new AppError('conflict', `Delivery "${id}" was replayed or changed concurrently`);
  await submitDeliveries(runner, [{ id, replays }], tenantId);
  return deliveryView({ ...row, status: 'pending', replays, attempts: 0 }, viewer);
}
