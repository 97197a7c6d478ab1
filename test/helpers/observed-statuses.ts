import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

// Every (method, path, status) the API tests observe through test/helpers/api.ts, one JSON line each, in one file per
// provider and worker process (workers run test files in parallel; appends of one line do not interleave). The
// OpenAPI check (test/setup/openapi-statuses.ts) reads them all once the run is over.
const DIR = join(process.cwd(), 'test-results/observed-statuses');

export type Observed = { method: string; path: string; status: number };

export function recordObserved(observed: Observed): void {
  const provider = process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite';
  mkdirSync(DIR, { recursive: true });
  appendFileSync(join(DIR, `${provider}-${process.pid}.jsonl`), `${JSON.stringify(observed)}\n`);
}

export function clearObserved(provider: string): void {
  for (const file of safeList()) if (file.startsWith(`${provider}-`)) rmSync(join(DIR, file), { force: true });
}

export function readObserved(provider: string): Observed[] {
  return safeList()
    .filter((file) => file.startsWith(`${provider}-`))
    .flatMap((file) =>
      readFileSync(join(DIR, file), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Observed),
    );
}

function safeList(): string[] {
  try {
    return readdirSync(DIR);
  } catch {
    return [];
  }
}
