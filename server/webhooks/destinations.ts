// Webhook destinations of a tenant: where deliveries go, how they are signed and cut. The signing secret and the
// header values (often credentials) are write-only: views show that a secret is set and which headers are sent.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError, notFound } from '../errors';
import { NAME_KINDS, nameSchema } from '../../core/model/names';
import { trimmedThrough } from '../storage/journal-trim';
import { PRIVATE_ADDRESSES_RULE, privateAddressesAllowed, refusedLiteralHost } from './address-policy';
import { newSigningSecret } from './signing';
import type { Database } from '../storage/database';

export const DEFAULT_BATCH_SIZE = 10_000;
export const MAX_BATCH_SIZE = 100_000;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_TIMEOUT_MS = 30_000;
/** The enter-action tag that sends a step's entering users to a destination: `webhook:<destination name>`. */
export const WEBHOOK_TAG_PREFIX = 'webhook:';

export const DestinationName = nameSchema(NAME_KINDS.webhook);
export const DestinationParams = z.object({ name: DestinationName });

/** Headers our delivery sets itself (or the HTTP stack owns); a destination cannot override them. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'transfer-encoding',
  'expect',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
]);

const Url = z
  .string()
  .max(2048)
  .superRefine((value, context) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return context.addIssue({ code: 'custom', message: `"${value.slice(0, 100)}" is not an absolute URL` });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      context.addIssue({ code: 'custom', message: `only http and https URLs are delivered to, not ${url.protocol}` });
    if (url.username || url.password) context.addIssue({ code: 'custom', message: 'credentials in the URL are not allowed; send them in a header' });
  });

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
const MAX_HEADERS = 20;

const HeaderValue = z
  .string()
  .max(4096)
  .regex(/^[\t\x20-\x7e]*$/, 'header values are printable ASCII: no line breaks, NUL or other control characters');

const Headers = z.record(z.string(), HeaderValue).superRefine((headers, context) => {
  const names = Object.keys(headers);
  if (names.length > MAX_HEADERS) context.addIssue({ code: 'custom', message: `at most ${MAX_HEADERS} headers, got ${names.length}` });
  for (const name of names) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name))
      context.addIssue({ code: 'custom', path: [name], message: `"${name.slice(0, 100)}" is not a header name (1–100 token characters, RFC 9110)` });
    else if (RESERVED_HEADERS.has(lower) || lower.startsWith('crowdflow-'))
      context.addIssue({ code: 'custom', path: [name], message: `${name} is set by Crowdflow and cannot be overridden` });
  }
});

const Secret = z.string().min(16, 'a signing secret has at least 16 characters').max(256);
const BatchSize = z.number().int().min(1).max(MAX_BATCH_SIZE);
const TimeoutMs = z.number().int().min(100).max(MAX_TIMEOUT_MS);

export const CreateDestinationBody = z.strictObject({
  name: DestinationName,
  url: Url,
  /** Absent: a secret is generated and returned once, in the 201 of this call. */
  secret: Secret.optional(),
  headers: Headers.default({}),
  batchSize: BatchSize.default(DEFAULT_BATCH_SIZE),
  timeoutMs: TimeoutMs.default(DEFAULT_TIMEOUT_MS),
  allNotifications: z.boolean().default(false),
  /** `tail`: moves committed from now on; `head`: every move still in the journal. */
  start: z.enum(['tail', 'head']).default('tail'),
});
export type CreateDestinationBody = z.infer<typeof CreateDestinationBody>;

export const UpdateDestinationBody = z
  .strictObject({ url: Url, secret: Secret, headers: Headers, batchSize: BatchSize, timeoutMs: TimeoutMs, allNotifications: z.boolean() })
  .partial();

export type DestinationRow = Awaited<ReturnType<typeof requireDestination>>;
/** What finds a destination's rows: its id, and its tenant, which every statement on them names. */
export type DestinationKey = Pick<DestinationRow, 'id' | 'tenantId'>;

export type DestinationView = {
  name: string;
  url: string;
  headerNames: string[];
  secretSet: true;
  batchSize: number;
  timeoutMs: number;
  allNotifications: boolean;
  /** The journal seq read through (moves after it are not cut into deliveries yet). */
  cursor: number;
  /** Retention deleted moves up to this seq before they were cut (reported to the receiver in a `lost` delivery); 0: none. */
  lostThrough: number;
  /** How an enter action names this destination. */
  actionTag: string;
  createdAt: string;
  updatedAt: string;
};

export function destinationView(row: DestinationRow): DestinationView {
  return {
    name: row.name,
    url: row.url,
    headerNames: Object.keys(JSON.parse(row.headers) as Record<string, string>),
    secretSet: true,
    batchSize: row.batchSize,
    timeoutMs: row.timeoutMs,
    allNotifications: row.allNotifications,
    cursor: Number(row.cursor),
    lostThrough: Number(row.lostThrough),
    actionTag: `${WEBHOOK_TAG_PREFIX}${row.name}`,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function requireDestination(database: Database, tenantId: string, name: string) {
  const row = await database.db.webhookDestination.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!row) throw notFound(`Webhook destination named "${name}"`);
  return row;
}

/** Refuses (400, naming the rule) a URL whose literal host is a private address or localhost, unless allowed. */
async function checkAddress(database: Database, tenantId: string, url: string, path: string, privateAddressesForEveryTenant: boolean): Promise<void> {
  const refused = refusedLiteralHost(new URL(url));
  if (refused && !(await privateAddressesAllowed(database, tenantId, privateAddressesForEveryTenant)))
    throw new AppError('private_address', `${path}: ${refused}; ${PRIVATE_ADDRESSES_RULE}`, { path });
}

async function newestSeq(database: Database, tenantId: string): Promise<bigint> {
  const newest = await database.db.journal.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true } });
  return newest?.seq ?? 0n;
}

/**
 * Creates a destination; `secret` is in the result only when it was generated here (shown this once). A private
 * address is refused unless the tenant's limit or `privateAddressesForEveryTenant` (CROWDFLOW_WEBHOOK_ALLOW_PRIVATE) allows it.
 */
export async function createDestination(
  database: Database,
  tenantId: string,
  body: CreateDestinationBody,
  now: number,
  privateAddressesForEveryTenant = false,
): Promise<{ destination: DestinationView; secret?: string }> {
  const existing = await database.db.webhookDestination.findUnique({ where: { tenantId_name: { tenantId, name: body.name } } });
  if (existing) throw new AppError('conflict', `Webhook destination named "${body.name}" already exists; PATCH it to change it`);
  await checkAddress(database, tenantId, body.url, 'url', privateAddressesForEveryTenant);
  const secret = body.secret ?? newSigningSecret();
  const row = await database.db.webhookDestination.create({
    data: {
      id: `wh_${randomBytes(8).toString('hex')}`,
      tenantId,
      name: body.name,
      url: body.url,
      secret,
      headers: JSON.stringify(body.headers),
      batchSize: body.batchSize,
      timeoutMs: body.timeoutMs,
      allNotifications: body.allNotifications,
      cursor: body.start === 'tail' ? await newestSeq(database, tenantId) : 0n,
      // What retention deleted before the destination existed was never owed to it.
      lostThrough: BigInt(await trimmedThrough(database, tenantId)),
      createdAt: new Date(now),
      updatedAt: new Date(now),
    },
  });
  return { destination: destinationView(row), ...(body.secret ? {} : { secret }) };
}

export async function updateDestination(
  database: Database,
  tenantId: string,
  name: string,
  body: z.infer<typeof UpdateDestinationBody>,
  now: number,
  privateAddressesForEveryTenant = false,
): Promise<DestinationView> {
  const row = await requireDestination(database, tenantId, name);
  if (body.url !== undefined) await checkAddress(database, tenantId, body.url, 'url', privateAddressesForEveryTenant);
  const updated = await database.db.webhookDestination.update({
    where: { id: row.id },
    data: { ...body, headers: body.headers === undefined ? undefined : JSON.stringify(body.headers), updatedAt: new Date(now) },
  });
  return destinationView(updated);
}

export async function listDestinations(database: Database, tenantId: string): Promise<DestinationView[]> {
  const rows = await database.db.webhookDestination.findMany({ where: { tenantId }, orderBy: { name: 'asc' } });
  return rows.map(destinationView);
}

/** Deletes the destination and its delivery log; procedures still in flight find their delivery gone and end. */
export async function deleteDestination(database: Database, tenantId: string, name: string): Promise<void> {
  const row = await requireDestination(database, tenantId, name);
  await database.db.webhookDestination.deleteMany({ where: { id: row.id } });
}

/** Whether a move with these enter tags (comma-separated, as the journal keeps them) goes to `destination`. */
export function movesTo(destination: { name: string; allNotifications: boolean }, enterTags: string | null): boolean {
  return destination.allNotifications || isActionFor(destination, enterTags);
}

/**
 * Whether a move reaches the destination as an action: its step's enter tags name it (`webhook:<name>`). Frequency
 * caps count and holdouts withhold only these, not an `allNotifications` feed of every move.
 */
export function isActionFor(destination: { name: string }, enterTags: string | null): boolean {
  if (!enterTags) return false;
  const tag = `${WEBHOOK_TAG_PREFIX}${destination.name}`;
  return enterTags.split(',').some((t) => t.trim() === tag);
}
