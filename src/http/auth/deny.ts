import type { Server } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';

/**
 * The default strategy: a route that names no caller kind is refused, never public by omission.
 * Routes that are public say so with `auth: false`.
 */
export function registerDenyByDefault(server: Server): void {
  server.auth.scheme('deny', () => ({
    authenticate() {
      throw new AppError('forbidden', { message: 'This route declares no caller kind.' });
    },
  }));
  server.auth.strategy('deny', 'deny');
  server.auth.default('deny');
}
