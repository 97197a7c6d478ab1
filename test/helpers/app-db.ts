// The registered app's storage, read back by tests and benches: they are the edge that built and registered the app
// (server/app.ts). Code in server/ is handed its storage by the composition root instead.
import { app } from '../../server/app';
import type { Db, Storage } from '../../server/storage/db';

/** The registered app's Prisma client. */
export function db(): Db {
  return app().storage.db;
}

/** The registered app's storage: its target, and on SQLite its connection and checkpointer. */
export function appStorage(): Storage {
  return app().storage;
}
