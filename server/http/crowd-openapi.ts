import { z } from 'zod';
import { operation } from '../openapi-kit';
import { EXPORT_COLUMNS_DESCRIPTION, EXPORT_COLUMNS_QUERY } from '../exports/openapi';
import { CombineCrowdsBody } from '../crowd/store';

export const Crowd = z.object({
  name: z.string(),
  count: z.number().describe('Users in the crowd'),
  sizeBytes: z.number().describe('Size of the stored portable roaring bitmap'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const tags = ['crowds'];
const params = ['tenant', 'name'];
const upload = {
  contentTypes: ['text/plain', 'text/csv', 'application/json', 'application/octet-stream'],
  description:
    'The crowd file, streamed: text/CSV (IDs separated by newlines, commas or whitespace; an optional header line), ' +
    'a JSON array of IDs, or a portable-format roaring bitmap (application/octet-stream). IDs are integers 0…4294967295. ' +
    'A bad ID is a 400 invalid_id naming its line and value; above CROWDFLOW_MAX_UPLOAD_BYTES is a 413. ' +
    'A roaring bitmap is checked in full before it is stored (container keys and array values strictly increasing, bitset and run ' +
    'cardinalities matching the header, runs sorted, non-overlapping, non-adjacent and within 65535, offsets, exact length): a 400 ' +
    'invalid_bitmap names the container and the problem, and nothing is stored. ' +
    'A body of 0 bytes is a 400 empty_upload whatever its type; a crowd with no users is sent as a newline (text/CSV), [] (JSON) or an empty portable bitmap.',
};

export const paths: Record<string, object> = {
  '/tenants/{tenant}/crowds': {
    get: operation({
      summary: 'List crowds',
      tags,
      params: ['tenant'],
      ok: { status: 200, description: 'Crowds by name', schema: z.object({ crowds: z.array(Crowd) }) },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/crowds/{name}': {
    get: operation({ summary: 'Get a crowd (metadata)', tags, params, ok: { status: 200, description: 'Crowd', schema: Crowd }, errors: [404] }),
    post: operation({
      summary: 'Upload a new crowd (409 when the name exists)',
      tags,
      params,
      body: upload,
      ok: { status: 201, description: 'Created', schema: Crowd },
      errors: [404, 409, 413, 415],
    }),
    put: operation({
      summary: 'Upload a crowd, replacing the one of that name atomically (201 when new, 200 when replaced)',
      tags,
      params,
      body: upload,
      ok: { status: 200, description: 'Replaced', schema: Crowd },
      alsoOk: [{ status: 201, description: 'Created (no crowd had that name)' }],
      errors: [404, 413, 415],
    }),
    delete: operation({
      summary: 'Delete a crowd (running instances keep their own copy of its users)',
      tags,
      params,
      ok: { status: 204, description: 'Deleted' },
      errors: [404],
    }),
  },
  '/tenants/{tenant}/crowds/{name}/export': {
    get: operation({
      summary: 'Download the crowd: csv (one ID per line), json (array), roaring (portable bytes) or parquet, with profile columns if asked',
      description: EXPORT_COLUMNS_DESCRIPTION,
      tags,
      params,
      query: { format: 'csv (default), json, roaring or parquet', limit: 'export only the smallest N IDs', columns: EXPORT_COLUMNS_QUERY },
      ok: { status: 200, description: 'The IDs (and columns); header x-crowdflow-count holds how many', contentType: 'text/csv' },
      errors: [404, 422],
    }),
  },
  '/tenants/{tenant}/combine-crowds': {
    post: operation({
      summary: 'Make a crowd from existing ones: union, intersection, or difference (the first minus the others)',
      tags,
      params: ['tenant'],
      body: CombineCrowdsBody,
      ok: { status: 201, description: 'Created', schema: Crowd },
      alsoOk: [{ status: 200, description: 'Replaced (replace: true and a crowd had that name)' }],
      errors: [404, 409],
    }),
  },
};
