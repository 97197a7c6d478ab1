import { z, type ZodType } from 'zod';

// Small builders so every area documents its routes from the same zod schemas it validates with.

export function schemaOf(schema: ZodType): object {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as object;
}

type Operation = {
  summary: string;
  /** Longer prose (CommonMark) under the summary. */
  description?: string;
  tags: string[];
  params?: string[];
  query?: Record<string, string>;
  /** Query parameters the call cannot do without: name → description. */
  requiredQuery?: Record<string, string>;
  /** Optional request headers: name → description. */
  headers?: Record<string, string>;
  body?: ZodType | { contentTypes: string[]; description: string };
  ok: { status: number; description: string; schema?: ZodType; contentType?: string };
  /** Other success statuses with the same body (e.g. 201 created beside 200 replaced). */
  alsoOk?: { status: number; description: string }[];
  errors?: number[];
};

/** One OpenAPI operation; `{name}` path parameters are listed in `params`. */
export function operation(op: Operation): object {
  const parameters = [
    ...(op.params ?? []).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ...Object.entries(op.requiredQuery ?? {}).map(([name, description]) => ({ name, in: 'query', required: true, description, schema: { type: 'string' } })),
    ...Object.entries(op.query ?? {}).map(([name, description]) => ({ name, in: 'query', required: false, description, schema: { type: 'string' } })),
    ...Object.entries(op.headers ?? {}).map(([name, description]) => ({ name, in: 'header', required: false, description, schema: { type: 'string' } })),
  ];
  const requestBody = !op.body
    ? undefined
    : 'contentTypes' in op.body
      ? { required: true, description: op.body.description, content: Object.fromEntries(op.body.contentTypes.map((t) => [t, { schema: {} }])) }
      : { required: true, content: { 'application/json': { schema: schemaOf(op.body as ZodType) } } };
  const content =
    op.ok.schema || op.ok.contentType ? { content: { [op.ok.contentType ?? 'application/json']: { schema: op.ok.schema ? schemaOf(op.ok.schema) : {} } } } : {};
  const responses: Record<string, object> = { [op.ok.status]: { description: op.ok.description, ...content } };
  for (const also of op.alsoOk ?? []) responses[also.status] = { description: also.description, ...content };
  // A JSON body is read with a size cap and a content-type check: every such operation can answer 413 and 415.
  const bodyErrors = op.body && !('contentTypes' in op.body) ? [413, 415] : [];
  for (const status of [400, 401, ...bodyErrors, ...(op.errors ?? [])]) {
    responses[status] = { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  }
  return {
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: op.tags,
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}
