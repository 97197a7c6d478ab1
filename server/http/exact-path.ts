// API paths are exact. A trailing slash, an empty segment or a `.`/`..` segment (also written `%2e`) names no
// resource: browsers and proxies resolve such paths into other ones, and Next.js answered them with a 308 to the
// normalised path — which once turned the studio's `DELETE …/crowds/..` into `DELETE /tenants/T`. Such paths get a
// 404 of their own, never a redirect, so a destructive route only ever acts on the path it was sent.

/** A message naming what makes `path` (without its query) inexact, or null when every segment names something. */
export function inexactApiPath(method: string, path: string): string | null {
  const segments = path.split('/').slice(1);
  const inexact = segments.some((segment) => segment === '' || /^(\.|%2e){1,2}$/i.test(segment));
  return inexact ? `No API route ${method} ${path}: API paths have no trailing slash, empty segments or "." and ".." segments` : null;
}
