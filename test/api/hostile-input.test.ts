import { describe, expect, it } from 'vitest';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';

// Input built to break the server rather than to be wrong: nesting that overflows recursive code, a cookie that is
// not valid percent-encoding, a condition of thousands of operators. Each is a 4xx naming the limit, never a 500.

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const nestedObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

function branchWorkflow(condition: string) {
  return {
    name: `deep-${condition.length}`,
    definition: {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition, next: 'done' },
            { condition: 'true', next: 'done' },
          ],
        },
        { name: 'done', kind: 'direct' },
      ],
    },
  };
}

describe('hostile input', () => {
  it('refuses event data nested 100,000 deep with a 400 naming the depth limit, and accepts 32 levels', async () => {
    const tenant = await createTenant();
    const body = `{"events":[{"user":1,"type":"deep","data":{"x":${nested(100_000)}}}]}`;
    const refused = expectError(
      await api('POST', '/events', { token: tenant.key, body, headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_json',
    );
    expect(refused.message).toMatch(/32 levels/);
    // events → [ → event → data → 28 more levels = 32 in all
    const atLimit = `{"events":[{"user":1,"type":"deep","data":${nestedObject(29)}}]}`;
    expect((await api('POST', '/events', { token: tenant.key, body: atLimit, headers: { 'content-type': 'application/json' } })).status).toBe(202);
  });

  it('refuses profile attributes nested 100,000 deep with a 400', async () => {
    const tenant = await createTenant();
    const body = `[{"user":7,"attributes":{"x":${nestedObject(100_000)}}}]`;
    const refused = expectError(
      await api('POST', `/tenants/${tenant.name}/profiles`, { token: tenant.key, body, headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_json',
    );
    expect(refused.message).toMatch(/nests .* 32 levels/);
    expect((await api('POST', `/tenants/${tenant.name}/profiles`, { token: tenant.key, body: [{ user: 7, attributes: { plan: 'pro' } }] })).status).toBe(200);
  });

  it('answers a malformed session cookie with 401', async () => {
    const response = await fetch(`${baseUrl()}/api/v1/tenants`, { headers: { cookie: 'cf_session=%E0%A4%A' } });
    expect(response.status).toBe(401);
    const body = await response.json();
    expect(body.error.code).toBe('unauthorized');
    expect(body.error.message).toMatch(/cookie/);
  });

  it('refuses a condition of 4,000 "!" with a clear message, and accepts 500 and a 680-term && chain', async () => {
    const tenant = await createTenant();
    const refused = expectError(
      await api('POST', `/tenants/${tenant.name}/workflows`, { token: tenant.key, body: branchWorkflow(`${'!'.repeat(4000)}true`) }),
      400,
      'invalid_workflow',
    );
    const text = JSON.stringify(refused);
    expect(text).toMatch(/nested too deeply/);
    expect(text).not.toMatch(/call stack/i);
    // A condition is at most 4,096 characters: the longest && chain that fits is within the depth limit.
    const chain = Array.from({ length: 680 }, () => 'true').join('&&');
    expect((await api('POST', `/tenants/${tenant.name}/workflows`, { token: tenant.key, body: branchWorkflow(chain) })).status).toBe(201);
    expect((await api('POST', `/tenants/${tenant.name}/workflows`, { token: tenant.key, body: branchWorkflow(`${'!'.repeat(500)}true`) })).status).toBe(201);
  });
});
