import { z } from 'zod';
import { operation } from '../http/openapi-kit';
import { ProfileAttributes, UpsertProfilesBody } from './profiles';

const Profile = z.object({ user: z.number(), attributes: ProfileAttributes, updatedAt: z.string() });
const tags = ['profiles'];

export const paths: Record<string, object> = {
  '/tenants/{tenant}/profiles': {
    post: operation({
      summary: 'Upsert up to 10,000 profiles, merging attributes (JSON Merge Patch: null removes a key); all or nothing',
      tags,
      params: ['tenant'],
      body: UpsertProfilesBody,
      ok: { status: 200, description: 'Distinct users written and how many were new', schema: z.object({ upserted: z.number(), created: z.number() }) },
      errors: [404, 415],
    }),
  },
  '/tenants/{tenant}/profiles/{user}': {
    get: operation({ summary: "Get one user's profile", tags, params: ['tenant', 'user'], ok: { status: 200, description: 'Profile', schema: Profile }, errors: [404] }),
    delete: operation({ summary: "Delete one user's profile", tags, params: ['tenant', 'user'], ok: { status: 204, description: 'Deleted' }, errors: [404] }),
  },
};
