// `next build` adds its dist folder's type globs to tsconfig.json; builds into per-run folders (tests, benchmarks)
// must not leave theirs behind. Keeps only the default `.next/` entries.
import { readFileSync, writeFileSync } from 'node:fs';

const config = JSON.parse(readFileSync('tsconfig.json', 'utf8'));
const include = config.include.filter((entry) => !entry.includes('/types/**') || entry.startsWith('.next/'));
if (include.length !== config.include.length) writeFileSync('tsconfig.json', JSON.stringify({ ...config, include }, null, 2) + '\n');
