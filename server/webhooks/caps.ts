// Frequency caps of a tenant (issue 37 §2): at most `maxDeliveries` action deliveries per user per window, to one
// destination or to all, with journeys and steps exempt (transactional messages). The rules live here; the decision is
// made where deliveries are cut (./capping.ts, ./cut.ts), so a capped user still moves: only the delivery is skipped.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError, isUniqueViolation, notFound } from '../errors';
import { NAME_KINDS, nameSchema } from '../../core/model/names';
import { DestinationName } from './destinations';
import type { Database } from '../storage/database';
import { updateCapRow } from '../storage/webhook-rows';

export const MAX_CAP_DELIVERIES = 50;
export const MIN_CAP_WINDOW_MS = 60_000;
export const MAX_CAP_WINDOW_MS = 31 * 86_400_000;
export const MAX_CAPS_PER_TENANT = 50;
const MAX_EXEMPT = 200;

export const CapName = nameSchema(NAME_KINDS.frequencyCap);
export const CapParams = z.object({ name: CapName });

const WINDOW_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30m`, `12h`, `1d`, `1w`: one whole number and one unit; windows are fixed and counted from 1970-01-01T00:00Z (a `1d` window is a UTC day). */
export const CapWindow = z
  .string()
  .max(20)
  .superRefine((text, context) => {
    const ms = windowMs(text);
    if (ms === undefined)
      return context.addIssue({ code: 'custom', message: `"${text.slice(0, 20)}" is not a window: write a whole number and m, h, d or w, e.g. 1d` });
    if (ms < MIN_CAP_WINDOW_MS || ms > MAX_CAP_WINDOW_MS) context.addIssue({ code: 'custom', message: `a window is 1m to 31d, not ${text}` });
  })
  .describe('The window: a whole number and m, h, d or w (1m to 31d); fixed windows counted from the epoch in UTC, so `1d` is a UTC day');

export function windowMs(text: string): number | undefined {
  const match = /^([1-9]\d{0,5})(m|h|d|w)$/.exec(text);
  return match ? Number(match[1]) * WINDOW_UNITS[match[2]] : undefined;
}

function windowText(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm'] as const) if (ms % WINDOW_UNITS[unit] === 0) return `${ms / WINDOW_UNITS[unit]}${unit}`;
  return `${ms / 60_000}m`;
}

const JourneyName = nameSchema(NAME_KINDS.workflow);
const StepName = nameSchema(NAME_KINDS.step);

export const CapExempt = z
  .strictObject({
    journeys: z.array(JourneyName).max(MAX_EXEMPT).default([]).describe('Journeys (workflow names) whose deliveries this cap neither skips nor counts'),
    steps: z
      .array(z.strictObject({ journey: JourneyName, step: StepName }))
      .max(MAX_EXEMPT)
      .default([])
      .describe('Steps (by journey and step name) whose enter actions this cap neither skips nor counts'),
  })
  .describe('Transactional deliveries: exempt from this cap');
export type CapExempt = z.infer<typeof CapExempt>;

const MaxDeliveries = z
  .number()
  .int()
  .min(1)
  .max(MAX_CAP_DELIVERIES)
  .describe(`At most this many action deliveries per user per window (1–${MAX_CAP_DELIVERIES})`);
const Destination = DestinationName.nullable().describe('Only deliveries to this webhook destination count and are capped; null or absent: every destination');

export const CreateCapBody = z.strictObject({
  name: CapName,
  maxDeliveries: MaxDeliveries,
  window: CapWindow,
  destination: Destination.default(null),
  exempt: CapExempt.default({ journeys: [], steps: [] }),
});
export type CreateCapBody = z.infer<typeof CreateCapBody>;

export const UpdateCapBody = z.strictObject({ maxDeliveries: MaxDeliveries, window: CapWindow, destination: Destination, exempt: CapExempt }).partial();
export type UpdateCapBody = z.infer<typeof UpdateCapBody>;

export type CapRow = Awaited<ReturnType<typeof requireCap>>;

export type CapView = {
  name: string;
  maxDeliveries: number;
  window: string;
  windowMs: number;
  destination: string | null;
  exempt: CapExempt;
  createdAt: string;
  updatedAt: string;
};

export function capView(row: CapRow): CapView {
  return {
    name: row.name,
    maxDeliveries: row.maxDeliveries,
    window: windowText(Number(row.windowMs)),
    windowMs: Number(row.windowMs),
    destination: row.destination,
    exempt: JSON.parse(row.exempt) as CapExempt,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function requireCap(database: Database, tenantId: string, name: string) {
  const row = await database.db.frequencyCap.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!row) throw notFound(`Frequency cap named "${name}"`);
  return row;
}

/** A cap naming a destination the tenant lacks would never apply: refused (400) so a typo is seen at once. */
async function checkDestination(database: Database, tenantId: string, destination: string | null | undefined): Promise<void> {
  if (!destination) return;
  const found = await database.db.webhookDestination.findUnique({ where: { tenantId_name: { tenantId, name: destination } }, select: { id: true } });
  if (!found) throw new AppError('validation_failed', `destination: the tenant has no webhook destination named "${destination}"`, { path: 'destination' });
}

export async function listCaps(database: Database, tenantId: string): Promise<CapView[]> {
  const rows = await database.db.frequencyCap.findMany({ where: { tenantId }, orderBy: { name: 'asc' } });
  return rows.map(capView);
}

export async function createCap(database: Database, tenantId: string, body: CreateCapBody, now: number): Promise<CapView> {
  await checkDestination(database, tenantId, body.destination);
  if ((await database.db.frequencyCap.count({ where: { tenantId } })) >= MAX_CAPS_PER_TENANT)
    throw new AppError('unprocessable', `A tenant has at most ${MAX_CAPS_PER_TENANT} frequency caps; delete one first`);
  try {
    const row = await database.db.frequencyCap.create({
      data: {
        id: `cap_${randomBytes(8).toString('hex')}`,
        tenantId,
        name: body.name,
        maxDeliveries: body.maxDeliveries,
        windowMs: BigInt(windowMs(body.window) as number),
        destination: body.destination,
        exempt: JSON.stringify(body.exempt),
        createdAt: new Date(now),
        updatedAt: new Date(now),
      },
    });
    return capView(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('conflict', `Frequency cap named "${body.name}" already exists; PATCH it to change it`);
    throw error;
  }
}

/** A new window length starts the cap's counting afresh (its windows no longer line up); a new maximum keeps it. */
export async function updateCap(database: Database, tenantId: string, name: string, body: UpdateCapBody, now: number): Promise<CapView> {
  const row = await requireCap(database, tenantId, name);
  await checkDestination(database, tenantId, body.destination);
  const newWindow = body.window === undefined ? undefined : BigInt(windowMs(body.window) as number);
  const updated = await updateCapRow(
    database,
    row,
    {
      maxDeliveries: body.maxDeliveries,
      windowMs: newWindow,
      destination: body.destination,
      exempt: body.exempt === undefined ? undefined : JSON.stringify(body.exempt),
      updatedAt: new Date(now),
    },
    newWindow !== undefined && newWindow !== row.windowMs,
  );
  return capView(updated);
}

export async function deleteCap(database: Database, tenantId: string, name: string): Promise<void> {
  const row = await requireCap(database, tenantId, name);
  await database.db.frequencyCap.deleteMany({ where: { id: row.id } });
}
