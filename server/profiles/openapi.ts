import { z } from 'zod';
import { operation } from '../openapi-kit';
import { QUERY_DEADLINE_MS } from '../conditions/deadline';
import { AudienceBody, MAX_PER_USER_AUDIENCE } from './audience';
import { AUDIENCE_CONFIDENCE } from './estimate';
import { ExplainBody } from './explain';
import { MAX_DISTINCT_STRINGS } from './index-field';
import { IMPORT_CHUNK_LINES } from './import';
import { ProfileAttributes, UpsertProfilesBody } from './profiles';

const DEADLINE =
  `The evaluation has a deadline of ${QUERY_DEADLINE_MS.toLocaleString('en-US')} ms: past it the request is stopped with 422 \`query_deadline\` ` +
  '(the engine thread was given back to events, timers and other tenants every 10 ms meanwhile).';

const Profile = z.object({ user: z.number(), attributes: ProfileAttributes, updatedAt: z.string() });
const tags = ['profiles'];

const FieldSummary = z.object({
  path: z.string(),
  type: z.enum(['string', 'number', 'boolean', 'object', 'other', 'timestamp']),
  users: z.number(),
  types: z.object({ string: z.number(), number: z.number(), boolean: z.number(), object: z.number(), other: z.number(), timestamp: z.number() }),
  topValues: z.array(z.object({ value: z.union([z.string(), z.boolean()]), users: z.number() })),
  distinctStrings: z.number().nullable(),
  highCardinality: z.boolean(),
  numbers: z.object({ scale: z.number(), bitSlices: z.number() }).nullable(),
  memoryBytes: z.number().describe("An estimate of what the path holds in the profile index's memory: bitmaps, value keys, per-user values"),
});
const ATTRIBUTE_LIMIT =
  'A write that would take the tenant past `maxProfileAttributes` distinct attribute paths (GET …/limits; nested keys are paths of their own) ' +
  'is refused with 422 `too_many_attributes`, naming the attribute and the limit (`details.limit`, `details.value`, `details.attribute`)';
const AudienceResult = z.object({
  count: z.number().describe('Users matching: exact when `exact`, otherwise the share matching in a uniform random sample times the users sampled from'),
  low: z.number().describe('The interval the true count lies in with probability `confidence`: equal to `count` when `exact`'),
  high: z.number().describe('See `low`'),
  confidence: z.number().describe(`${AUDIENCE_CONFIDENCE} for a sampled estimate (Wilson score interval with continuity correction), 1 when exact`),
  sample: z.array(z.number()).describe('The first matching user IDs among those evaluated, ascending'),
  universe: z.number(),
  mode: z.enum(['plan', 'per-user']),
  exact: z.boolean(),
  evaluated: z.number().describe('Users the condition was evaluated for one by one (the universe with a plan)'),
  ms: z.number(),
});
const Explanation = z.object({
  workflowId: z.string(),
  version: z.number().nullable(),
  conditions: z.array(
    z.object({
      step: z.string(),
      kind: z.enum(['branch', 'timer']),
      branch: z.number().nullable(),
      condition: z.string(),
      mode: z.enum(['plan', 'per-user']),
      reason: z.string(),
      leaves: z.array(z.string()),
      perEvent: z.string().nullable(),
    }),
  ),
});

export const paths: Record<string, object> = {
  '/tenants/{tenant}/profiles': {
    post: operation({
      summary: 'Upsert up to 10,000 profiles, merging attributes (JSON Merge Patch: null removes a key); all or nothing',
      description: `${ATTRIBUTE_LIMIT}: nothing of the request is written.`,
      tags,
      params: ['tenant'],
      body: UpsertProfilesBody,
      ok: { status: 200, description: 'Distinct users written and how many were new', schema: z.object({ upserted: z.number(), created: z.number() }) },
      errors: [404, 415, 422],
    }),
  },
  '/tenants/{tenant}/profiles/{user}': {
    get: operation({
      summary: "Get one user's profile",
      tags,
      params: ['tenant', 'user'],
      ok: { status: 200, description: 'Profile', schema: Profile },
      errors: [404],
    }),
    delete: operation({ summary: "Delete one user's profile", tags, params: ['tenant', 'user'], ok: { status: 204, description: 'Deleted' }, errors: [404] }),
  },
  '/tenants/{tenant}/profiles/import': {
    post: operation({
      summary:
        `Import profiles from a streamed body: NDJSON ({"user", "attributes"} a line) or CSV with a header row (user,plan,age,…; ` +
        `address.country nests; an empty cell leaves the attribute out). Merged like the upsert (JSON Merge Patch), committed in chunks of ` +
        `${IMPORT_CHUNK_LINES} lines, each all or nothing; a bad line is a 400 naming the line and how many lines were committed before it ` +
        `(re-sending the file is safe)`,
      tags,
      params: ['tenant'],
      query: {
        types:
          'CSV only: declared column types, e.g. zip:string,age:number,optIn:boolean (otherwise a JSON number is a number, true/false a boolean, anything else a string)',
      },
      description: `${ATTRIBUTE_LIMIT}, at the first line that would; the chunks committed before it stay, as with a bad line.`,
      body: { contentTypes: ['application/x-ndjson', 'text/csv'], description: 'One profile a line' },
      ok: {
        status: 200,
        description: 'Lines read, distinct users per chunk summed, profiles created, chunks committed, milliseconds',
        schema: z.object({ lines: z.number(), users: z.number(), created: z.number(), chunks: z.number(), ms: z.number() }),
      },
      // 503: the engine (which writes the import) stopped during it; the chunks committed before stay.
      errors: [404, 415, 422, 503],
    }),
  },
  '/tenants/{tenant}/profiles/fields': {
    get: operation({
      summary:
        `The indexed attribute paths (dotted for nested objects): users having each, users per type, the most common string/boolean ` +
        `values, whether it is high-cardinality (over the tenant's maxIndexedValuesPerAttribute distinct strings, ${MAX_DISTINCT_STRINGS} ` +
        `by default: equality is a per-user scan), the numbers' fixed-point scale and the path's memory in the index; with the index's ` +
        `memory in all and the tenant's attribute limits`,
      tags,
      params: ['tenant'],
      ok: {
        status: 200,
        description: 'Fields, most used first',
        schema: z.object({
          profiles: z.number(),
          bitmapBytes: z.number(),
          memoryBytes: z.number(),
          limits: z.object({ maxProfileAttributes: z.number(), maxIndexedValuesPerAttribute: z.number() }),
          fields: z.array(FieldSummary),
        }),
      },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/audience': {
    post: operation({
      summary:
        `How many users a condition matches now, and the first of them: a bitmap plan over crowds, user ID ranges and the profile index when ` +
        `the condition has one (exact), else per user over the users its planned conjuncts leave: all of them when they are at most ` +
        `${MAX_PER_USER_AUDIENCE.toLocaleString('en-US')} (exact), else a uniform random sample of that many, the count then carrying a ` +
        `${AUDIENCE_CONFIDENCE * 100}% interval (low, high; exact=false). The universe is the crowd given, else the users with a profile plus ` +
        `the crowds the condition names. Needs the read scope.`,
      description: `The condition passes the same gate as a workflow save: 400 \`invalid_condition\` (syntax, types, over 4,096 characters, nesting, literal sizes, a pattern that is not RE2 or expands too far) or 400 \`condition_too_costly\` (estimated cost per evaluation over the budget), each naming the problem. ${DEADLINE}`,
      tags: ['profiles'],
      params: ['tenant'],
      body: AudienceBody,
      ok: { status: 200, description: 'The estimate', schema: AudienceResult },
      errors: [404, 422],
    }),
  },
  '/tenants/{tenant}/workflows/{id}/explain': {
    get: operation({
      summary:
        "For each condition of the workflow's current version: whether timers, ttl and audience estimates run it as a bitmap plan or per user, why, and how each profile leaf is answered",
      tags: ['workflows'],
      params: ['tenant', 'id'],
      description: DEADLINE,
      ok: { status: 200, description: 'One entry per condition', schema: Explanation },
      errors: [404, 422],
    }),
    post: operation({
      summary: 'The same for an unsaved definition of this workflow (the editor draft). Needs the read scope.',
      description: `Each condition of the draft (steps, entry, goal) passes the gate a save applies first: 400 \`invalid_condition\` or \`condition_too_costly\`, naming the step and \`details.path\`. ${DEADLINE}`,
      tags: ['workflows'],
      params: ['tenant', 'id'],
      body: ExplainBody,
      ok: { status: 200, description: 'One entry per condition', schema: Explanation },
      errors: [404, 422],
    }),
  },
};
