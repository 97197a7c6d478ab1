import { ProfilesPage } from '@/studio/profiles';

export default async function Profiles({ params }: { params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <ProfilesPage tenant={decodeURIComponent(tenant)} />;
}
