// Writes the next SQL migration for both providers by diffing the previous schema snapshot
// against prisma/models.prisma with Prisma's WebAssembly schema engine (`prisma migrate`
// needs a native engine that cannot be downloaded here). Usage: node scripts/make-migration.mjs <name>
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import * as bindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import { composeSchema } from './prisma-generate.mjs';

const SchemaEngine = await loadSchemaEngine();
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) throw new Error('usage: make-migration.mjs <snake_case_name>');

const adapters = {
  sqlite: () => new PrismaBetterSqlite3({ url: ':memory:' }),
  postgres: () => new PrismaPg({ connectionString: process.env.MIGRATION_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }),
};

for (const provider of ['sqlite', 'postgres']) {
  const dir = join(root, 'prisma/migrations', provider);
  mkdirSync(dir, { recursive: true });
  const previous = readdirSync(dir)
    .filter((d) => existsSync(join(dir, d, 'schema.prisma')))
    .sort()
    .at(-1);
  const target = composeSchema(provider);
  const engine = await SchemaEngine.new({ datamodels: undefined }, () => {}, bindMigrationAwareSqlAdapterFactory(adapters[provider]()));
  const from = previous
    ? { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: readFileSync(join(dir, previous, 'schema.prisma'), 'utf8') }] }
    : { tag: 'empty' };
  const result = await engine.diff({
    from,
    to: { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: target }] },
    script: true,
    exitCode: null,
    filters: { externalTables: [], externalEnums: [] },
  });
  const sql = result.stdout ?? '';
  if (!sql.trim() || /empty migration/i.test(sql)) {
    console.log(`${provider}: no changes`);
    continue;
  }
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const out = join(dir, `${stamp}_${name}`);
  mkdirSync(out);
  writeFileSync(join(out, 'migration.sql'), sql);
  writeFileSync(join(out, 'schema.prisma'), target);
  console.log(`${provider}: wrote ${out}`);
}
process.exit(0);

// The package imports its .wasm as an ES module, which Node 20 cannot; instantiate it by hand.
async function loadSchemaEngine() {
  const wasmPath = createRequire(import.meta.url)
    .resolve('@prisma/schema-engine-wasm/schema_engine_bg')
    .replace(/\.js$/, '.wasm');
  const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), { './schema_engine_bg.js': bindings });
  bindings.__wbg_set_wasm(instance.exports);
  instance.exports.__wbindgen_start();
  return bindings.SchemaEngine;
}
