import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

// The project's imports read as text, for the tests that hold the layers (layers.test.ts) and the browser-shared
// folder (browser-shared-imports.test.ts). A project import is resolved to its file; a package keeps its name.

export const root = join(import.meta.dirname, '../..');

export type Import = { from: string; spec: string; typeOnly: boolean };

/** The TypeScript files under a folder of the project (generated clients left out), as project paths. */
export function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.tsx?$/.test(file) && !file.includes('generated'))
    .map((file) => join(folder, file));
}

/** The imports, re-exports and dynamic imports of a file; relative and `@/` specs resolved to project paths. */
export function importsOf(file: string): Import[] {
  const text = readFileSync(join(root, file), 'utf8');
  const found: Import[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) {
    const [statement, typeKeyword, spec] = match;
    const typeOnly = Boolean(typeKeyword) || /^(?:import|export)\s*\{\s*(?:type\s+[\w$]+\s*,?\s*)+\}\s*from/.test(statement);
    found.push({ from: file, spec: resolveSpec(file, spec), typeOnly });
  }
  for (const [, spec] of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push({ from: file, spec: resolveSpec(file, spec), typeOnly: false });
  return found;
}

function resolveSpec(file: string, spec: string): string {
  if (spec.startsWith('@/')) return resolveSource(spec.slice(2));
  return spec.startsWith('.') ? resolveSource(normalize(join(dirname(file), spec))) : spec;
}

function resolveSource(path: string): string {
  return [`${path}.ts`, `${path}.tsx`, join(path, 'index.ts')].find((candidate) => existsSync(join(root, candidate))) ?? path;
}
