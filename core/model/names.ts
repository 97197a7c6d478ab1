import { z } from 'zod';

// One rule for every name a user gives a thing: tenants, crowds, workflows, steps, consumers, webhook destinations
// and API keys.
// Names travel in URL path segments, where a browser turns `.` and `..` (also written `%2e%2e`) into "this folder"
// and "the folder above": a crowd named `..` once made the studio's DELETE of that crowd delete its tenant. So no
// name may be a dot segment, hold `/`, `\`, `%`, `?`, `#` or a control character. Every name starts with a letter,
// a digit or `_`, which rules out `.`, `..` and leading spaces at once; kinds differ only in which of the safe
// characters they allow after that and in length.

/** The characters each kind allows; every charset is a subset of `label`. */
const CHARSETS = {
  /** Free text a marketer types: letters of any script, digits, spaces and `_ - . , : ( ) & ' +`. */
  label: {
    pattern: /^[\p{L}\p{N}_][\p{L}\p{N} _.,:()&'+-]*$/u,
    says: 'letters, digits, spaces and _ - . , : ( ) & \' +, starting with a letter, a digit or "_"',
  },
  /** Names integrations type into URLs and scripts: ASCII letters, digits, `_`, `.` and `-`. */
  token: { pattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, says: 'A–Z, a–z, 0–9, "_", "." and "-", starting with a letter, a digit or "_"' },
  /** Tenant names, which also name studio pages: lower-case letters, digits, `_` and `-`. */
  slug: { pattern: /^[a-z0-9_][a-z0-9_-]*$/, says: 'a–z, 0–9, "_" and "-", starting with a letter, a digit or "_"' },
  /** Step names, which workflows reference by name: ASCII letters, digits, `_` and `-`, not starting with a digit. */
  identifier: { pattern: /^[A-Za-z_][A-Za-z0-9_-]*$/, says: 'A–Z, a–z, 0–9, "_" and "-", starting with a letter or "_"' },
} as const;

export type NameCharset = keyof typeof CHARSETS;
export type NameKind = { noun: string; charset: NameCharset; max: number };

export const NAME_KINDS = {
  tenant: { noun: 'Tenant name', charset: 'slug', max: 63 },
  crowd: { noun: 'Crowd name', charset: 'token', max: 100 },
  consumer: { noun: 'Consumer name', charset: 'token', max: 100 },
  webhook: { noun: 'Webhook destination name', charset: 'token', max: 100 },
  frequencyCap: { noun: 'Frequency cap name', charset: 'token', max: 100 },
  step: { noun: 'Step name', charset: 'identifier', max: 64 },
  workflow: { noun: 'Workflow name', charset: 'label', max: 200 },
  apiKey: { noun: 'API key name', charset: 'label', max: 100 },
} as const satisfies Record<string, NameKind>;

/** The one check: null when `value` is a valid name of this kind, else a message that says what is wrong. */
export function nameProblem(kind: NameKind, value: string): string | null {
  const { pattern, says } = CHARSETS[kind.charset];
  const rule = `${kind.noun}s are 1–${kind.max} characters of ${says}`;
  if (value.length === 0) return `${kind.noun} is empty. ${rule}`;
  if (value.length > kind.max) return `${kind.noun} is ${value.length} characters long. ${rule}`;
  if (!pattern.test(value)) return `${kind.noun} "${printable(value)}" is not allowed. ${rule}`;
  if (value.endsWith(' ')) return `${kind.noun} "${printable(value)}" ends with a space. ${rule}`;
  return null;
}

/** The zod schema of a name of this kind, for request bodies and path parameters. */
export function nameSchema(kind: NameKind) {
  // Labels are typed by hand: surrounding spaces are dropped, as a form field would.
  const text = kind.charset === 'label' ? z.string().trim() : z.string();
  return text.superRefine((value, context) => {
    const problem = nameProblem(kind, value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });
}

/** Control characters shown as escapes, so an error message never carries a raw NUL or line break. */
function printable(value: string): string {
  const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
  return shown.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
