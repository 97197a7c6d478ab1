import { randomBytes } from 'node:crypto';

/** Short random ids with a readable prefix, e.g. `wf_3kq9…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}
