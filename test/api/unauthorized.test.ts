import { expect, it } from 'vitest';
import { api, expectError } from '../helpers/api';

it('answers 401 with WWW-Authenticate: Bearer, without credentials and with a bad token', async () => {
  for (const token of [null, 'not-a-valid-token']) {
    for (const [method, path] of [
      ['GET', '/tenants'],
      ['POST', '/events'],
    ] as const) {
      const result = await api(method, path, { token, body: method === 'POST' ? { events: [{ user: 1, type: 'x' }] } : undefined });
      expectError(result, 401, 'unauthorized');
      expect(result.headers.get('www-authenticate')).toBe('Bearer realm="crowdflow"');
    }
  }
});
