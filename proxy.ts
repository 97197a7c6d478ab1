// Security headers of the studio's pages (not the API: the matcher skips /api/ and static files). The
// Content-Security-Policy allows only this origin's scripts plus Next.js's inline bootstrap scripts, which carry a
// fresh nonce per page (Next reads it from the request's CSP header while rendering, so pages render dynamically);
// no framing (clickjacking), no plugins, no foreign form targets, and no Referer to other origins.
import { NextResponse, type NextRequest } from 'next/server';

export function studioContentSecurityPolicy(nonce: string, development: boolean): string {
  return [
    "default-src 'self'",
    // 'strict-dynamic': scripts the nonced bootstrap loads are trusted too; React needs eval only in development.
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${development ? " 'unsafe-eval'" : ''}`,
    // The canvas positions nodes and edges with inline style attributes, which cannot carry a nonce.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function proxy(request: NextRequest): NextResponse {
  const nonce = btoa(crypto.randomUUID());
  const policy = studioContentSecurityPolicy(nonce, process.env.NODE_ENV === 'development');
  const headers = new Headers(request.headers);
  headers.set('content-security-policy', policy);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set('content-security-policy', policy);
  response.headers.set('referrer-policy', 'same-origin');
  response.headers.set('x-content-type-options', 'nosniff');
  response.headers.set('x-frame-options', 'DENY');
  return response;
}

export const config = {
  matcher: [{ source: '/((?!api/|_next/static|_next/image|favicon.ico).*)' }],
};
