import type { NextConfig } from 'next';

const config: NextConfig = {
  // Test runs build into their own folder so parallel runs never replace each other's server files.
  distDir: process.env.CROWDFLOW_DIST_DIR || '.next',
  // Native addons cannot be bundled by Turbopack; load them from node_modules at run time.
  serverExternalPackages: ['roaring', 'better-sqlite3', 'pg', '@prisma/adapter-better-sqlite3', '@prisma/adapter-pg'],
  poweredByHeader: false,
  // An API path is exact: Next's trailing-slash 308 once turned the browser-normalised `DELETE …/crowds/..` into
  // `DELETE /tenants/T`. Such paths are answered 404 by route() (server/http/respond.ts) instead of redirected.
  skipTrailingSlashRedirect: true,
  // Next gzips with a fresh zlib stream per response: about 0.25 ms of the one server thread, more than a counts
  // answer or an event batch acknowledgement costs itself. Put a compressing proxy in front when the network needs it.
  compress: false,
};

export default config;
