import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Projects whose every file starts its own processes (Chromium and the studio's server, three cluster members). */
const HEAVY_PROJECTS = new Set(['e2e', 'cluster']);

/**
 * Runs the light projects (logic, sqlite, postgres) one after another and spreads the heavy projects' files evenly
 * among them. Files are not isolated (`isolate: false`), and vitest hands a worker its next file only when that file
 * belongs to the same project (otherwise it starts a new worker, which imports the app again: ~1.5 s): a light
 * project's files in a row share their workers' module cache. Spreading the heavy files keeps each beside a light file
 * rather than another heavy one, and the few heavy files never wait for each other at the end. Within a project the
 * order stays vitest's (slowest first when it knows the last run's durations).
 */
export default class SpreadSequencer extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const light = sorted.filter((file) => !HEAVY_PROJECTS.has(file.project.name));
    const heavy = interleaveProjects(sorted.filter((file) => HEAVY_PROJECTS.has(file.project.name)));
    const projectOrder = [...new Set(light.map((file) => file.project.name))];
    light.sort((a, b) => projectOrder.indexOf(a.project.name) - projectOrder.indexOf(b.project.name));
    const place = new Map<TestSpecification, number>();
    light.forEach((file, index) => place.set(file, index + 0.5));
    heavy.forEach((file, index) => place.set(file, ((index + 0.5) / heavy.length) * light.length));
    return [...light, ...heavy].sort((a, b) => place.get(a)! - place.get(b)!);
  }
}

/** The heavy files with each project's spread evenly over the list (so cluster files do not bunch up at one end). */
function interleaveProjects(files: TestSpecification[]): TestSpecification[] {
  const total = new Map<string, number>();
  for (const file of files) total.set(file.project.name, (total.get(file.project.name) ?? 0) + 1);
  const seen = new Map<string, number>();
  const place = new Map<TestSpecification, number>();
  for (const file of files) {
    const index = seen.get(file.project.name) ?? 0;
    seen.set(file.project.name, index + 1);
    place.set(file, (index + 0.5) / total.get(file.project.name)!);
  }
  return [...files].sort((a, b) => place.get(a)! - place.get(b)!);
}
