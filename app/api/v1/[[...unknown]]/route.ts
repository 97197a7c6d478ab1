import { AppError } from '@/server/errors';
import { route } from '@/server/http/respond';

const unknownRoute = route(async (request) => {
  throw new AppError('not_found', `No API route ${request.method} ${new URL(request.url).pathname}`);
});

export { unknownRoute as GET, unknownRoute as POST, unknownRoute as PUT, unknownRoute as PATCH, unknownRoute as DELETE };
