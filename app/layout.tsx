import type { ReactNode } from 'react';
import '@xyflow/react/dist/style.css';
import './globals.css';
import './studio.css';
import './canvas.css';

// Every page renders per request: Next.js puts the per-request CSP nonce (proxy.ts) on its inline scripts only then.
export const dynamic = 'force-dynamic';

export const metadata = { title: 'Crowdflow', description: 'Visual journeys over very large crowds' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
