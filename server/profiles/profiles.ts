import { z } from 'zod';
import { AppError, notFound } from '../errors';
import { MAX_USER_ID } from '../crowd/bitmap';
import { notifyProfilesChanged } from './changes';
import { tenantLimits } from '../limits/limits';
import { AttributeBudget, NO_PATHS } from './attribute-budget';
import type { NextTurn } from '../clock';
import { profileWrite } from './index-store';
import type { Database } from '../storage/database';
import { lockedProfileWrite } from '../storage/profile-merges';

export type Attributes = Record<string, unknown>;
export type ProfileView = { user: number; attributes: Attributes; updatedAt: string };

export const MAX_PROFILES_PER_CALL = 10_000;
export const MAX_PROFILE_BYTES = 64 * 1024;

export const UserId = z.number().int().min(0).max(MAX_USER_ID);
export const ProfileAttributes = z.record(z.string(), z.unknown());
export const ProfileUpsert = z.strictObject({ user: UserId, attributes: ProfileAttributes });
export const UpsertProfilesBody = z.array(ProfileUpsert).min(1).max(MAX_PROFILES_PER_CALL);

/** A user id from a URL: digits only, 0 … 4294967295. */
export function parseUserParam(raw: string): number {
  const user = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!(user <= MAX_USER_ID)) {
    throw new AppError('invalid_id', `"${raw.slice(0, 40)}" is not a user ID; user IDs are integers from 0 to ${MAX_USER_ID}`, { value: raw.slice(0, 40) });
  }
  return user;
}

const isObject = (value: unknown): value is Attributes => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * JSON Merge Patch (RFC 7386): objects merge key by key, `null` removes a key, anything else replaces it.
 * So `{"plan": "gold"}` keeps the other attributes, and `{"plan": null}` removes only `plan`.
 */
export function mergeAttributes(target: Attributes, patch: Attributes): Attributes {
  const result: Attributes = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else if (isObject(value)) result[key] = mergeAttributes(isObject(result[key]) ? result[key] : {}, value);
    else result[key] = value;
  }
  return result;
}

/**
 * Merges each item's attributes into the user's stored profile (creating it), all in one transaction: either
 * every profile of the call is written or none. Items for the same user apply in order.
 */
export async function upsertProfiles(
  database: Database,
  tenantId: string,
  items: z.infer<typeof UpsertProfilesBody>,
  turn?: NextTurn,
): Promise<{ upserted: number; created: number }> {
  const users = [...new Set(items.map((item) => item.user))];
  const limits = await tenantLimits(database, tenantId);
  const result = await profileWrite(
    database,
    tenantId,
    (index) => {
      // Before the transaction: a write past the attribute limit is refused whole, having read and written nothing.
      const budget = new AttributeBudget(index, limits.maxProfileAttributes);
      items.forEach((item, i) => budget.admit(item.attributes, `item ${i}, user ${item.user}`));
      index.setIndexedValueLimit(limits.maxIndexedValuesPerAttribute);
      return lockedProfileWrite(
        database,
        tenantId,
        async (profiles) => {
          const before = parsedProfiles(await profiles.read(users));
          const merged = new Map(before);
          for (const item of items) merged.set(item.user, mergeAttributes(merged.get(item.user) ?? {}, item.attributes));
          await profiles.upsert(
            users.map((user) => [user, serialize(user, merged.get(user)!)]),
            new Date(),
          );
          const changes = users.map((user) => ({ user, before: before.get(user), after: merged.get(user) }));
          return { result: { upserted: users.length, created: users.length - before.size }, changes };
        },
        { maxWait: 30_000, timeout: 120_000 },
      );
    },
    turn,
  );
  notifyProfilesChanged(database, tenantId, users);
  return result;
}

/**
 * Where the request is read, before the engine gets it: a request that alone names more distinct attribute paths than
 * the tenant's limit is refused without crossing to the engine thread, where upsertProfiles counts the paths the
 * tenant already has too (copying 100 objects of 1,000 keys each to that thread took seconds on a loaded machine).
 */
export async function refuseAttributesPastLimit(database: Database, tenantId: string, items: z.infer<typeof UpsertProfilesBody>): Promise<void> {
  const budget = new AttributeBudget(NO_PATHS, (await tenantLimits(database, tenantId)).maxProfileAttributes);
  items.forEach((item, i) => budget.admit(item.attributes, `item ${i}, user ${item.user}`));
}

/** Stored profiles (their attributes' JSON, by user) as attributes. */
export function parsedProfiles(stored: Map<number, string>): Map<number, Attributes> {
  return new Map([...stored].map(([user, text]) => [user, JSON.parse(text) as Attributes]));
}

function serialize(user: number, attributes: Attributes): string {
  const text = JSON.stringify(attributes);
  if (Buffer.byteLength(text) > MAX_PROFILE_BYTES) {
    throw new AppError('validation_failed', `The profile of user ${user} would be ${Buffer.byteLength(text)} bytes; the limit is ${MAX_PROFILE_BYTES}`, {
      user,
    });
  }
  return text;
}

export async function getProfile(database: Database, tenantId: string, user: number): Promise<ProfileView> {
  const row = await database.db.profile.findUnique({ where: { tenantId_user: { tenantId, user: BigInt(user) } } });
  if (!row) throw notFound(`The profile of user ${user}`);
  return { user, attributes: JSON.parse(row.attributes) as Attributes, updatedAt: row.updatedAt.toISOString() };
}

export async function deleteProfile(database: Database, tenantId: string, user: number): Promise<void> {
  await profileWrite(database, tenantId, () =>
    lockedProfileWrite(database, tenantId, async (profiles) => {
      const before = parsedProfiles(await profiles.read([user])).get(user);
      if (!before) throw notFound(`The profile of user ${user}`);
      await profiles.delete(user);
      return { result: undefined, changes: [{ user, before }] };
    }),
  );
  notifyProfilesChanged(database, tenantId, [user]);
}
