import { z } from 'zod';
import { notFound } from '@dam/errors';
import { pathId } from '@dam/http';

export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(25),
});

const positiveId = z.coerce.number().int().positive().max(2147483647);
/** A user id of no user's form is an unknown user: 404 like any other (CONTRACT §16). */
export const userIdParams = z.object({ user_id: pathId(positiveId.clone(), () => notFound('USER_NOT_FOUND', 'User not found')) });
export const groupIdParams = z.object({ group_id: positiveId });

export const email = z.email().max(320);
export const password = z.string().min(8, 'must be at least 8 characters').max(1024);
export const personName = z.string().trim().max(100);
