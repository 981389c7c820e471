import type { Principal } from '@dam/auth-tokens';
import type { UsageMetric, UsageRecord } from '@dam/events';
import type { ApiKeyRecord } from './api-keys';
import type { Audience, NewNotification } from './notifications';
import type { Settings } from './settings';
import type { UserRecord } from './users';

/** A page of a list (1-based). */
export interface Page {
  page: number;
  page_size: number;
}

/** One page of a list, as the API answers it. */
export interface Listed<T> extends Page {
  items: T[];
  total: number;
}

export type NewUser = Pick<UserRecord, 'group_id' | 'email' | 'password_hash' | 'first_name' | 'last_name' | 'role_id'>;

export interface UserChanges {
  role_id?: number;
  disabled?: boolean;
  password_hash?: string;
}

/** `users`: every query is scoped to a group unless it looks up a globally unique credential. */
export interface Users {
  /** Every live account of an email, oldest first: an email is unique per group only. */
  findAllByEmail(email: string, limit?: number): Promise<UserRecord[]>;
  /** A user of another group is simply not found; `forUpdate` locks the row for the transaction. */
  findVisible(groupId: number, id: number, forUpdate?: boolean): Promise<UserRecord | undefined>;
  listInGroup(groupId: number, page: Page): Promise<{ items: UserRecord[]; total: number }>;
  /** Throws EMAIL_TAKEN (409) when the group has the email. */
  insert(u: NewUser): Promise<UserRecord>;
  /** A new password or disabling ends every token signed before (token_epoch) and the upload key. */
  update(groupId: number, id: number, c: UserChanges): Promise<UserRecord | undefined>;
  /** Keeps the row (assets name it as creator) but frees the email and blocks every way in. */
  softDelete(groupId: number, id: number): Promise<boolean>;
  findByAccessId(accessId: string): Promise<UserRecord | undefined>;
  /** A new accessID for the user and for each of their API keys; undefined when there is no such user. */
  rotateAccessId(groupId: number, id: number): Promise<string | undefined>;
  findByUploadKey(uploadKey: string): Promise<UserRecord | undefined>;
  rotateUploadKey(groupId: number, id: number): Promise<string | undefined>;
  setPreferences(id: number, preferences: Record<string, unknown>): Promise<void>;
  touchLogin(id: number): Promise<void>;
}

/** A key with its creator's current role and state (the key acts as its creator, limited to its role). */
export interface KeyWithUser {
  key: ApiKeyRecord;
  user_role_id: number;
  user_disabled: boolean;
}

/** `api_keys`: stored as hashes; a revoked key is kept, marked. */
export interface ApiKeys {
  insert(k: Omit<ApiKeyRecord, 'created_at'>, keyHash: string): Promise<ApiKeyRecord>;
  listActive(groupId: number, page: Page): Promise<{ items: ApiKeyRecord[]; total: number }>;
  /** The key's owner and name once revoked now; undefined when the group has no such unrevoked key. */
  revoke(groupId: number, id: string): Promise<{ user_id: number; name: string } | undefined>;
  revokeAllOfUser(userId: number): Promise<void>;
  /** The unrevoked key of this hash, of a user not deleted. */
  findByHash(keyHash: string): Promise<KeyWithUser | undefined>;
  /** The accessID of a key's links, while the key is not revoked. */
  accessIdOf(groupId: number, keyId: string): Promise<string | undefined>;
  /** The unrevoked key whose links carry this accessID, of a user not deleted. */
  findByAccessId(accessId: string): Promise<KeyWithUser | undefined>;
}

export interface GroupRecord {
  id: number;
  name: string;
  created_at: Date;
}

export interface Groups {
  insert(name: string): Promise<GroupRecord>;
  count(): Promise<number>;
}

/** A group's settings record. */
export interface SettingsStore {
  /** `forUpdate` locks the row for the transaction (two PATCHes each see the other's change). */
  get(groupId: number, forUpdate?: boolean): Promise<Settings | undefined>;
  insert(groupId: number, data: Settings): Promise<void>;
  replace(groupId: number, data: Settings): Promise<void>;
}

/** Login's messages and the notices already turned into messages. */
export interface Notifications {
  /** A message with a topic joins the user's unseen message of that topic (newer text, one more repeat). */
  add(messages: readonly NewNotification[]): Promise<void>;
  /** The users a notice is for; never a disabled or deleted one. */
  recipients(audience: Audience): Promise<number[]>;
  /** Claims a notice id: false when it was claimed before (a redelivery). */
  claimNotice(noticeId: string): Promise<boolean>;
  /** The user's unseen messages, now seen: the newest `limit`, oldest first. */
  takeUnseen(userId: number, limit: number): Promise<string[]>;
  /** Deletes messages and claimed notice ids older than the retention; answers the messages deleted. */
  prune(retentionDays: number): Promise<number>;
}

/** The stores one transaction sees: all its writes commit together or not at all. */
export interface AuthTx {
  users: Users;
  apiKeys: ApiKeys;
  groups: Groups;
  settings: SettingsStore;
  notifications: Notifications;
  /** Waits for a lock every replica sees, held until the transaction ends. */
  lock(key: number): Promise<void>;
}

/** auth's records: each store on its own (one statement each), or several in one transaction. */
export interface AuthStore extends Omit<AuthTx, 'lock'> {
  transaction<T>(fn: (tx: AuthTx) => Promise<T>): Promise<T>;
}

export type UsagePeriod = '1h' | '24h' | '7d';

export interface UsageSeries {
  series: Array<{ start: string; value: number }>;
  total: number;
}

/** Usage statistics as auth keeps them. */
export interface UsageStore {
  /** Counts a record once, however often it arrives; answers whether it was new. */
  record(r: UsageRecord): Promise<boolean>;
  series(q: { groupId: number; metric: UsageMetric; from: Date; to: Date; period: UsagePeriod; userId?: number }): Promise<UsageSeries>;
  pruneRecords(days?: number): Promise<number>;
}

/** Which of these asset ids exist in the principal's group (metadata decides; auth holds no assets). */
export interface AssetDirectory {
  existing(principal: Principal, ids: string[]): Promise<string[]>;
}
