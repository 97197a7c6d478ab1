import type { TestProject } from 'vitest/node';
import { createTemplateDatabase } from '../helpers/test-database';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabaseUrl: string;
  }
}

/** One migrated database per provider, which test/setup/database.ts copies for each test file instead of migrating. */
export default async function setup(project: TestProject) {
  const template = await createTemplateDatabase(project.name === 'postgres' ? 'postgres' : 'sqlite', `template_${project.name}`);
  project.provide('templateDatabaseUrl', template.url);
  return () => template.drop();
}
