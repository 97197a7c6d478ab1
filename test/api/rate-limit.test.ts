import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

// Per-key token buckets sized by the tenant's limits: 429 with Retry-After once a key's bucket is empty.

describe('API key rate limits', () => {
  it("throttles a key past its tenant's burst with 429 and Retry-After, leaving other keys and the admin alone", async () => {
    const tenant = await createTenant(1);
    const other = await createTenant(1);
    const limits = `/tenants/${tenant.name}/limits`;
    expect((await api('GET', limits)).body).toMatchObject({ requestsPerSecond: 2000, requestBurst: 4000 });
    expect((await api('PUT', limits, { body: { requestsPerSecond: 1, requestBurst: 3 } })).body).toMatchObject({ requestsPerSecond: 1, requestBurst: 3 });

    // The key's bucket starts full (3) when the limit changes and refills one request per second: of 8 requests sent
    // at once, 3 pass plus one per second they took, the rest are refused.
    const startedAt = Date.now();
    const answers = await Promise.all(Array.from({ length: 8 }, () => api('GET', `/tenants/${tenant.name}/crowds`, { token: tenant.key })));
    const refilled = Math.floor((Date.now() - startedAt) / 1000);
    const passed = answers.filter((a) => a.status === 200).length;
    expect(passed).toBeGreaterThanOrEqual(3);
    expect(passed).toBeLessThanOrEqual(3 + refilled);
    expect(answers.filter((a) => a.status === 429).length).toBe(8 - passed);
    const refused = answers.find((a) => a.status === 429)!;
    expect(expectError(refused, 429, 'rate_limited').message).toMatch(/1 requests per second \(burst 3\)/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    expect((await api('GET', `/tenants/${tenant.name}/crowds`)).status).toBe(200);
    expect((await api('GET', `/tenants/${other.name}/crowds`, { token: other.key })).status).toBe(200);

    // Back to the defaults: the key is served again at once.
    expect((await api('PUT', limits, { body: { requestsPerSecond: null, requestBurst: null } })).body.requestsPerSecond).toBe(2000);
    expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: tenant.key })).status).toBe(200);
    expectError(await api('PUT', limits, { body: { requestsPerSecond: 0 } }), 400, 'validation_failed');
  });
});
