-- A user's tokens are valid only while their `ep` claim equals this: a password change or disabling the
-- user bumps it, and every JWT signed before stops working at the edges (within their status cache).
ALTER TABLE users ADD COLUMN token_epoch integer NOT NULL DEFAULT 0;

-- An email is unique within a group, not across groups: otherwise creating a user would tell a tenant's
-- admin that the email exists in another tenant. Login tries each account of the email (see login.use-case).
DROP INDEX users_email_key;
CREATE UNIQUE INDEX users_group_email_key ON users (group_id, lower(email));
CREATE INDEX users_email_idx ON users (lower(email));
