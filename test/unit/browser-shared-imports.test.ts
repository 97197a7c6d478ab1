import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

// The studio runs in the browser and shares the workflow schema, its validation, condition analysis and crons with the
// server (one validateWorkflow(), two callers). Those files live in server/ for now; this test keeps them
// browser-safe: the studio may take values only from them, and they import nothing but each other and the packages
// below: no database, no node: modules, no engine. (Type-only imports are erased and may go anywhere.)

/** The server files the studio may import values from, and everything they import. */
const BROWSER_SHARED = [
  'server/model/workflow.ts',
  'server/model/names.ts',
  'server/model/cron.ts',
  'server/model/validate.ts',
  'server/model/branch-routing.ts',
  'server/model/holdout.ts',
  'server/model/user-hash.ts',
  'server/model/lift.ts',
  'server/model/experiment.ts',
  'server/model/quiet-hours.ts',
  'server/conditions/parse.ts',
  'server/conditions/gate.ts',
  'server/conditions/analyze.ts',
  'server/conditions/environment.ts',
  'server/conditions/cost.ts',
  'server/conditions/regex.ts',
  'server/conditions/regex-size.ts',
  'server/conditions/plan.ts',
  'server/profiles/paths.ts',
];
const BROWSER_PACKAGES = ['zod', 'cron-parser', 'cronstrue', '@marcbachmann/cel-js', 're2js'];

const root = join(import.meta.dirname, '../..');

type Import = { from: string; spec: string; typeOnly: boolean };

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.tsx?$/.test(file) && !file.includes('generated'))
    .map((file) => join(folder, file));
}

/** The imports and re-exports of a file; `spec` resolved to a project path for relative ones. */
function importsOf(file: string): Import[] {
  const text = readFileSync(join(root, file), 'utf8');
  const found: Import[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) {
    const [statement, typeKeyword, spec] = match;
    const typeOnly = Boolean(typeKeyword) || /^(?:import|export)\s*\{\s*(?:type\s+[\w$]+\s*,?\s*)+\}\s*from/.test(statement);
    const resolved = spec.startsWith('.') ? resolveSource(normalize(join(dirname(file), spec))) : spec;
    found.push({ from: file, spec: resolved, typeOnly });
  }
  return found;
}

function resolveSource(path: string): string {
  for (const candidate of [`${path}.ts`, `${path}.tsx`, join(path, 'index.ts')]) {
    try {
      readFileSync(join(root, candidate));
      return candidate;
    } catch {}
  }
  return path;
}

describe('code shared with the browser', () => {
  it('is all the studio takes values from in server/', () => {
    const taken = new Set(
      ['studio', 'app']
        .flatMap(sourceFiles)
        .flatMap(importsOf)
        .filter((i) => !i.typeOnly && i.spec.startsWith('server/'))
        .filter((i) => !i.from.startsWith('app/api/'))
        .map((i) => i.spec),
    );
    expect([...taken].filter((file) => !BROWSER_SHARED.includes(file))).toEqual([]);
  });

  it('imports nothing server-only: only itself and browser-safe packages', () => {
    const outside = BROWSER_SHARED.flatMap(importsOf)
      .filter((i) => !i.typeOnly)
      .filter((i) => !BROWSER_SHARED.includes(i.spec) && !BROWSER_PACKAGES.includes(i.spec))
      .map((i) => `${i.from} → ${i.spec}`);
    expect(outside).toEqual([]);
  });

  it('is read the way the checks above assume (the parser finds value and type imports)', () => {
    const studioImports = sourceFiles('studio').flatMap(importsOf);
    expect(studioImports.some((i) => i.spec === 'server/model/workflow.ts' && !i.typeOnly)).toBe(true);
    expect(studioImports.some((i) => i.spec === 'server/engine/types.ts' && i.typeOnly)).toBe(true);
  });
});
