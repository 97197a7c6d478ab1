// What the OpenAPI document says of exports with columns (step, crowd and converted-user exports share it).
import { TABLE_PAGE_ROWS } from './table-export';

export const EXPORT_COLUMNS_QUERY =
  'Comma-separated profile attribute paths (dotted for nested keys, as GET …/profiles/fields names them), written after the user ID; ' +
  'an unknown path is a 400 naming it, `entered_at` a 422 (the engine keeps no entry time per user)';

export const EXPORT_COLUMNS_DESCRIPTION =
  'With `columns`, `format=csv` starts with a header row (`user,plan,…`; a user without the attribute has an empty field; RFC 4180 quoting) and ' +
  '`format=parquet` writes typed columns: `user` INT64, whole numbers INT64, other numbers DOUBLE, booleans BOOLEAN, timestamps ' +
  'TIMESTAMP(MILLIS, UTC), strings (and attributes of mixed types, as text) dictionary-encoded UTF-8; a missing value is null. ' +
  `Parquet without columns holds the \`user\` column alone. Rows are in ascending user order, streamed in row groups of ${TABLE_PAGE_ROWS.toLocaleString('en-US')} users ` +
  '(Snappy-compressed); profiles are read as they are while the export streams. `format=json|roaring` carry IDs only: with `columns` they are a 400.';
