import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Spreads each project's files evenly over the run instead of running the projects one after another: with two
 * workers, a heavy file (an e2e file's Chromium and server, a cluster file's three servers) runs beside a light unit
 * or API file rather than beside another heavy one, and the few heavy files never wait for each other at the end.
 * Within a project the order stays vitest's (slowest first when it knows the last run's durations).
 */
export default class SpreadSequencer extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const total = new Map<string, number>();
    for (const file of sorted) total.set(file.project.name, (total.get(file.project.name) ?? 0) + 1);
    const seen = new Map<string, number>();
    const place = new Map<TestSpecification, number>();
    for (const file of sorted) {
      const index = seen.get(file.project.name) ?? 0;
      seen.set(file.project.name, index + 1);
      place.set(file, (index + 0.5) / total.get(file.project.name)!);
    }
    return sorted.sort((a, b) => place.get(a)! - place.get(b)!);
  }
}
