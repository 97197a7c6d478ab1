import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

// The studio runs in the browser and shares the workflow schema, its validation, condition analysis and crons with the
// server (one validateWorkflow(), two callers). That code is the folder core/: the studio may take values from it and
// from no server file, and every file in it imports nothing but core/ and the packages below: no database, no node:
// modules, no engine. (Type-only imports are erased and may go anywhere.)

/** The folder of code shared with the browser. */
const BROWSER_SHARED_FOLDER = 'core/';
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
  it('is all the studio takes values from: nothing from server/', () => {
    const taken = new Set(
      ['studio', 'app']
        .flatMap(sourceFiles)
        .flatMap(importsOf)
        .filter((i) => !i.typeOnly && i.spec.startsWith('server/'))
        .filter((i) => !i.from.startsWith('app/api/'))
        .map((i) => `${i.from} → ${i.spec}`),
    );
    expect([...taken]).toEqual([]);
  });

  it('imports nothing server-only: only itself and browser-safe packages', () => {
    const shared = sourceFiles(BROWSER_SHARED_FOLDER);
    expect(shared.length).toBeGreaterThan(0);
    const outside = shared
      .flatMap(importsOf)
      .filter((i) => !i.typeOnly)
      .filter((i) => !i.spec.startsWith(BROWSER_SHARED_FOLDER) && !BROWSER_PACKAGES.includes(i.spec))
      .map((i) => `${i.from} → ${i.spec}`);
    expect(outside).toEqual([]);
  });

  it('is read the way the checks above assume (the parser finds value and type imports)', () => {
    const studioImports = sourceFiles('studio').flatMap(importsOf);
    expect(studioImports.some((i) => i.spec === 'core/model/workflow.ts' && !i.typeOnly)).toBe(true);
    expect(studioImports.some((i) => i.spec === 'server/engine/types.ts' && i.typeOnly)).toBe(true);
  });
});
