import { expect, it } from 'vitest';
import { errorResponse } from '../../server/http/respond';

// Errors thrown by the database, as a route handler would see them, mapped through the one error table.

function prismaError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

it.each([
  ['SQLite lock wait exhausted (Prisma P1008)', prismaError('P1008', 'Operation has timed out')],
  ['transaction could not start in time (P2028)', prismaError('P2028', 'Transaction API error: Unable to start a transaction in the given time.')],
  ['no pooled connection (P2024)', prismaError('P2024', 'Timed out fetching a new connection from the connection pool.')],
  ['raw driver SQLITE_BUSY', prismaError('SQLITE_BUSY', 'database is locked')],
])('a busy database is a 503 unavailable with Retry-After, not a 500: %s', async (_name, error) => {
  const response = errorResponse(error);
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect((await response.json()).error).toMatchObject({ code: 'unavailable', message: expect.stringContaining('retry') });
});

it.each([
  ['an error nobody expected', new TypeError('x is undefined')],
  [
    'a transaction that ran past its timeout (P2028, not a start)',
    prismaError('P2028', 'Transaction API error: A commit cannot be executed on an expired transaction.'),
  ],
])('%s stays a 500 internal', async (_name, error) => {
  const response = errorResponse(error);
  expect(response.status).toBe(500);
  expect((await response.json()).error.code).toBe('internal');
});
