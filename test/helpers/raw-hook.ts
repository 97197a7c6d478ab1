// The real database with a hook in front of its raw transactions (server/storage/raw.ts), to watch or fail the
// engine's commits in a test. Everything else passes straight through.
import type { Database } from '../../server/storage/database';
import type { RawDb, RawStatement } from '../../server/storage/raw';

export type TransactionHook = (statements: RawStatement[], commit: () => Promise<Record<string, unknown>[][]>) => Promise<Record<string, unknown>[][]>;

export function withTransactionHook(real: Database, hook: TransactionHook): Database {
  return {
    db: real.db,
    dialect: real.dialect,
    local: real.local,
    async raw(): Promise<RawDb> {
      const raw = await real.raw();
      return Object.assign(Object.create(raw) as RawDb, {
        transaction: (statements: RawStatement[]) => hook(statements, () => raw.transaction(statements)),
      });
    },
  };
}
