import { z } from 'zod';

export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(25),
});

const positiveId = z.coerce.number().int().positive().max(2147483647);
export const userIdParams = z.object({ user_id: positiveId });
export const groupIdParams = z.object({ group_id: positiveId });

export const email = z.email().max(320);
export const password = z.string().min(8, 'must be at least 8 characters').max(1024);
export const personName = z.string().trim().max(100);
