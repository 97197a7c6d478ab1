// What a module that reads or writes rows is handed: the Prisma client, the raw driver of the hot statements and the
// SQL dialect, all three of ONE storage, and what its app keeps in memory beside the rows. Modules take a `Database` as an argument (a function's parameter, or a
// service object's constructor) instead of reaching for the process's storage themselves, so what a function touches
// is in its signature and a test can hand it another database. The composition root (server/create-app.ts) builds
// one per app and hands it on; tests take the registered app's from test/helpers/app-db.ts.
import type { Db, Storage } from './db';
import { dialectOf, type Dialect } from './dialect';
import { LocalState } from './local-state';
import { rawOf, type RawDb } from './raw';

export interface Database {
  /** The Prisma client. */
  readonly db: Db;
  readonly dialect: Dialect;
  /** The raw driver (server/storage/raw.ts), opened on first use. */
  raw(): Promise<RawDb>;
  /** What the app of this Database keeps in memory beside its rows: notices, caches, profile indexes (./local-state.ts). */
  readonly local: LocalState;
}

/** The Database of `held` (built once per storage, by its app: server/create-app.ts). */
export function databaseOf(held: Storage): Database {
  return { db: held.db, dialect: dialectOf(held.target), raw: () => rawOf(held), local: new LocalState() };
}
