/** A number from a row: PostgreSQL hands BIGINT columns over as strings, SQLite as numbers; NULL reads as 0. */
export const num = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));
