import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from '../helpers/import-graph';

// The layers of the code, top to bottom (docs/ARCHITECTURE.md, "The layers"). A file may import (values or types)
// from its own layer and the layers below it; an import that runs back up is refused unless UPWARD_ALLOWED lists it
// with why it is still there, so a NEW upward import fails. A place is a folder (`server/engine/`) or a file
// (`server/app.ts`); the most specific place that holds a file decides its layer.
const LAYERS: { name: string; places: string[] }[] = [
  {
    name: "process and composition roots (the engine thread's entry is one)",
    places: ['server/main.ts', 'server/boot.ts', 'server/create-app.ts', 'server/app.ts', 'server/shutdown.ts', 'server/engine/thread.ts'],
  },
  { name: 'HTTP API', places: ['app/', 'server/http/'] },
  { name: 'features over the engine', places: ['server/workflows/', 'server/analytics/', 'server/exports/', 'server/webhooks/', 'server/notifications/'] },
  { name: 'cluster (plugs into the engine)', places: ['server/cluster/'] },
  { name: 'engine', places: ['server/engine/'] },
  {
    name: 'domain modules the engine uses',
    places: ['server/procedures/', 'server/profiles/', 'server/crowd/', 'server/tenants/', 'server/security/', 'server/limits/', 'server/auth.ts'],
  },
  { name: 'condition evaluation', places: ['server/conditions/'] },
  {
    name: 'storage and process basics',
    places: [
      'server/storage/',
      'server/clock.ts',
      'server/env.ts',
      'server/errors.ts',
      'server/ids.ts',
      'server/json-body.ts',
      'server/lookup-cache.ts',
      'server/openapi-kit.ts',
      'server/process-owner.ts',
      'server/source-thread.ts',
    ],
  },
  { name: 'shared with the browser', places: ['core/'] },
];

// Why the upward imports below are still there (issue 35 §1 hands every part in from the composition root; the engine
// reaches cluster/ only through its ports, server/engine/cluster-port.ts).
const EDGE = 'the route wrappers are the edge that reads the registered app, by design (one hand-over through globalThis)';

const UPWARD_ALLOWED: { arrow: string; why: string }[] = [{ arrow: 'server/http/request-context.ts → server/app.ts', why: EDGE }];

function layerOf(file: string): number {
  const holders = LAYERS.flatMap((layer, index) => layer.places.filter((place) => file.startsWith(place)).map((place) => ({ place, index })));
  holders.sort((a, b) => b.place.length - a.place.length);
  return holders[0]?.index ?? -1;
}

const files = ['app', 'server', 'core'].flatMap(sourceFiles);
const projectImports = files.flatMap(importsOf).filter((i) => /^(app|server|core)\//.test(i.spec));
const upward = projectImports.filter((i) => layerOf(i.spec) < layerOf(i.from)).map((i) => `${i.from} → ${i.spec}`);

describe('layers', () => {
  it('place every file of app/, server/ and core/ in a layer', () => {
    expect(files.filter((file) => layerOf(file) < 0)).toEqual([]);
  });

  it('have no import running back up but the listed ones', () => {
    const allowed = new Set(UPWARD_ALLOWED.map((entry) => entry.arrow));
    expect([...new Set(upward)].filter((arrow) => !allowed.has(arrow))).toEqual([]);
  });

  it('list no allowed upward import that is gone (remove it from UPWARD_ALLOWED)', () => {
    expect(UPWARD_ALLOWED.map((entry) => entry.arrow).filter((arrow) => !upward.includes(arrow))).toEqual([]);
  });

  it('are read the way the checks above assume', () => {
    expect(layerOf('server/engine/engine.ts')).toBeGreaterThan(layerOf('server/http/respond.ts'));
    expect(projectImports.some((i) => i.from === 'server/engine/engine.ts' && i.spec === 'server/engine/partition.ts')).toBe(true);
  });
});

// Issue 35 §3: which database it is decides algorithms only inside server/storage/ (its operations: event log appends,
// profile rows, procedure writes); the rest of server/ calls those operations and never learns which database it has.
describe('storage', () => {
  const readsOfTheFlag = files
    .filter((file) => !file.startsWith('server/storage/'))
    .filter((file) => /\broundTripPerStatement\b/.test(readFileSync(file, 'utf8')));
  const copyWriters = projectImports.filter((i) => i.spec === 'server/storage/pg-copy.ts' && !i.from.startsWith('server/storage/'));

  it('alone chooses an algorithm by the database (roundTripPerStatement)', () => {
    expect(readsOfTheFlag).toEqual([]);
  });

  it('alone writes PostgreSQL COPY data', () => {
    expect(copyWriters.map((i) => i.from)).toEqual([]);
  });

  // Every file outside server/storage/ says what to do in TypeScript, hands no SQL to a driver and opens no
  // transaction: a state change that needs one is a storage operation.
  const SQL_TEXT =
    /\b(SELECT|INSERT INTO|DELETE FROM|ON CONFLICT|LISTEN|NOTIFY)\b|\bUPDATE ["$]|\bpg_\w+\(|\$(queryRaw|executeRaw)|\.raw\(|\.dialect\b|\broundTripPerStatement\b/;
  const sqlFree = files.filter((file) => !file.startsWith('server/storage/'));

  it('alone holds SQL (no SQL text, raw driver or Dialect elsewhere)', () => {
    const found = sqlFree.flatMap((file) => {
      const match = withoutComments(readFileSync(file, 'utf8')).match(SQL_TEXT);
      return match ? [`${file}: ${match[0]}`] : [];
    });
    expect(sqlFree.length).toBeGreaterThan(0);
    expect(found).toEqual([]);
  });

  it('alone opens database drivers or imports the raw driver or the Dialect', () => {
    const drivers = sqlFree.flatMap(importsOf).filter((i) => ['pg', 'better-sqlite3', 'server/storage/raw.ts', 'server/storage/dialect.ts'].includes(i.spec));
    expect(drivers.map((i) => `${i.from} → ${i.spec}`)).toEqual([]);
  });

  it('alone opens transactions', () => {
    const found = sqlFree.filter((file) => /\$transaction\b/.test(withoutComments(readFileSync(file, 'utf8'))));
    expect(found).toEqual([]);
  });

  it('finds SQL the way the check above assumes', () => {
    expect(withoutComments('// SELECT in a comment\nconst a = 1; /* DELETE FROM "T" */')).not.toMatch(SQL_TEXT);
    for (const code of [
      "run('SELECT 1')",
      'x.query(`UPDATE "T" SET a = 1`)',
      `x.query(\`UPDATE \${table} SET a = 1\`)`,
      'tx.$queryRawUnsafe(sql)',
      'await database.raw()',
      'database.dialect.table(name)',
    ]) {
      expect(code).toMatch(SQL_TEXT);
    }
  });
});

/** Source text without its comments, which may name the SQL they explain (a string holding `//` loses its rest). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}
