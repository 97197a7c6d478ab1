// The registered app's storage, read back by tests and benches: they are the edge that built and registered the app
// (server/app.ts). Code in server/ is handed its storage by the composition root instead.
import { app } from '../../server/app';
import type { Database } from '../../server/storage/database';
import type { Db, Storage } from '../../server/storage/db';

/** The registered app's Prisma client. */
export function db(): Db {
  return app().storage.db;
}

/** The registered app's Database, to hand the modules a test calls. */
export function database(): Database {
  return app().database;
}

/** The registered app's storage: its target, and on SQLite its connection and checkpointer. */
export function appStorage(): Storage {
  return app().storage;
}
