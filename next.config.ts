import type { NextConfig } from 'next';

const config: NextConfig = {
  // Test runs build into their own folder so parallel runs never replace each other's server files.
  distDir: process.env.CROWDFLOW_DIST_DIR || '.next',
  // Native addons cannot be bundled by Turbopack; load them from node_modules at run time.
  serverExternalPackages: ['roaring', 'better-sqlite3', 'pg', '@prisma/adapter-better-sqlite3', '@prisma/adapter-pg'],
  poweredByHeader: false,
};

export default config;
