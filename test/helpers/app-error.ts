import { expect } from 'vitest';
import { AppError } from '../../server/errors';

/** The AppError `promise` is rejected with (the test fails if it resolves or fails otherwise). */
export async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}
