import { z } from 'zod';

// The settings a server reads from its environment. A composition root parses them once (server/main.ts for the
// process, createApp's default for a test or script) and hands each part the ones it needs: no part reads them from
// process.env itself, so an app built with another Env behaves by it.
const EnvSchema = z.object({
  DATABASE_URL: z.string().default('file:./data/crowdflow.db'),
  CROWDFLOW_ADMIN_TOKEN: z.string().min(16, 'CROWDFLOW_ADMIN_TOKEN must be at least 16 characters').optional(),
  CROWDFLOW_MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 ** 3),
  CROWDFLOW_ENGINE: z.enum(['on', 'off']).default('on'),
  /** `on`: the engine runs on a worker thread of its own (docs/engine.md "The engine thread"); `off`: on the request thread. */
  CROWDFLOW_ENGINE_THREAD: z.enum(['on', 'off']).default('on'),
  /** `auto`: on PostgreSQL every server process is a member of one cluster sharing the partitions (server/cluster/); `off`: not. */
  CROWDFLOW_CLUSTER: z.enum(['auto', 'off']).default('auto'),
  /**
   * PostgreSQL connections each of a process's threads may hold at once (one pool per thread, shared by Prisma and the
   * raw driver; server/storage/db.ts); unset: 10 for a thread running the engine, 5 for a server's request thread.
   */
  CROWDFLOW_PG_POOL_MAX: z.coerce.number().int().min(1).max(100).optional(),
  /**
   * Where the connections that need a PostgreSQL session of their own go (the cluster's LISTEN and session advisory
   * lock, the migrations) when DATABASE_URL points at a transaction-pooling PgBouncer; unset: DATABASE_URL.
   */
  CROWDFLOW_DIRECT_DATABASE_URL: z.string().optional(),
  /** `1`: webhook destinations of every tenant may be private, loopback or link-local addresses (server/webhooks/address-policy.ts). */
  CROWDFLOW_WEBHOOK_ALLOW_PRIVATE: z
    .enum(['0', '1'])
    .default('0')
    .transform((value) => value === '1'),
  /** Addresses of reverse proxies whose X-Forwarded-For names the client (comma-separated; server/security/client-address.ts). */
  CROWDFLOW_TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean),
    ),
});

export type Env = z.infer<typeof EnvSchema>;

/** `source` (the process's environment by default) as settings, with their defaults; throws naming a bad value. */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  return EnvSchema.parse(source);
}
