import { expect, it } from 'vitest';
import { json, jsonTextOf } from '../../server/http/respond';

// Our HTTP server writes a json() response's text as it was built, instead of reading the body back through its stream.

it('a json() response carries its text, body and headers as built; any other response carries none', async () => {
  const response = json({ count: 2n, name: 'a' }, 201, { 'x-extra': '1' });
  expect(jsonTextOf(response)).toBe('{"count":2,"name":"a"}');
  expect(response.status).toBe(201);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('x-extra')).toBe('1');
  expect(await response.text()).toBe('{"count":2,"name":"a"}');
  expect(jsonTextOf(new Response('{"count":2}'))).toBeUndefined();
});
