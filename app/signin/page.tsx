import { Suspense } from 'react';
import { SignInForm } from '@/studio/signin';

export const metadata = { title: 'Sign in · Crowdflow' };

export default function SignInPage() {
  return (
    <Suspense>
      <SignInForm />
    </Suspense>
  );
}
