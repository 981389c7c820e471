import { badRequest, forbidden, notFound, type AppError } from '@dam/errors';
import type { AccessOwner } from '@dam/internal-api';
import { permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';

/** metadata's answer for one id that cannot be delivered, as the same error to the client (404s stay 404s). */
export const deliveryError = (e: { status: number; code: string; message: string }): AppError =>
  e.status === 404 ? notFound(e.code, e.message) : e.status === 403 ? forbidden(e.message, e.code) : badRequest(e.code, e.message);

/** The principal a link acts as at the edge: the user behind its accessID, with the permissions of their role. */
export function principalOfOwner(owner: AccessOwner): Principal {
  return {
    user_id: owner.user_id,
    group_id: owner.group_id,
    role_id: owner.role_id,
    role_name: ROLE_NAMES[owner.role_id] ?? 'CREATOR',
    permissions: permissionsFor(owner.role_id),
    via: 'jwt',
  };
}
