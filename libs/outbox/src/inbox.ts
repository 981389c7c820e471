import type { PoolClient } from 'pg';

/**
 * The inbox half of exactly-once effects: a consumer records the id of each message it acted on in the same
 * transaction as the change the message caused; a redelivered message finds its id and changes nothing.
 * Include in the owning service's migrations.
 */
export const INBOX_MIGRATION_SQL = `
CREATE TABLE IF NOT EXISTS processed_messages (
  id           text PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
`;

/** Claims `messageId` inside the caller's transaction: true the first time, false once it was processed. */
export async function claimMessage(client: Pick<PoolClient, 'query'>, messageId: string): Promise<boolean> {
  const { rowCount } = await client.query('INSERT INTO processed_messages (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [messageId]);
  return (rowCount ?? 0) > 0;
}
