import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from '../helpers/import-graph';

// The studio runs in the browser and shares the workflow schema, its validation, condition analysis and crons with the
// server (one validateWorkflow(), two callers). That code is the folder core/: the studio may take values from it and
// from no server file, and every file in it imports nothing but core/ and the packages below: no database, no node:
// modules, no engine. (Type-only imports are erased and may go anywhere.)

/** The folder of code shared with the browser. */
const BROWSER_SHARED_FOLDER = 'core/';
const BROWSER_PACKAGES = ['zod', 'cron-parser', 'cronstrue', '@marcbachmann/cel-js', 're2js'];

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
