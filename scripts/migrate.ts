import { parseDatabaseUrl } from '../server/storage/database-url';
import { applyMigrations } from '../server/storage/migrate';
import { parseEnv } from '../server/env';

const target = parseDatabaseUrl(parseEnv().DATABASE_URL);
const applied = await applyMigrations(target);
const where = target.provider === 'sqlite' ? target.file : `PostgreSQL schema ${target.schema}`;
console.log(applied.length ? `applied ${applied.join(', ')} to ${where}` : `${where} is up to date`);
