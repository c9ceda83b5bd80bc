/**
 * The default e-mail address of a PostgreSQL deployment (`/api/config/email`): saved as a setting row,
 * never validated, since this deployment has no mail transport.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { toIso } from '../dates.js';
import { deleteSettingRow, readSettingRow, writeSettingRow } from './settings-rows.js';

const EMAIL_KEY = 'email.default_address';
const EMAIL_UNAVAILABLE =
  'Sending e-mail is not available on this deployment (PostgreSQL metadata, no mail transport); the default address is kept but cannot be validated.';

export async function emailSetting(em: EntityManager) {
  const row = await readSettingRow<{ address: string }>(em, EMAIL_KEY);
  return {
    default_address: row?.value.address ?? null,
    is_validated: false as const,
    sending_available: false as const,
    message: EMAIL_UNAVAILABLE,
    updated_at: toIso(row?.updatedAt),
    updated_by: row?.updatedBy ?? null,
  };
}

export async function saveEmailSetting(em: EntityManager, address: string, by: string) {
  await writeSettingRow(em, EMAIL_KEY, { address }, by);
  return emailSetting(em);
}

/** Removes the saved address (idempotent); `deleted` says whether there was one. */
export async function deleteEmailSetting(em: EntityManager) {
  const deleted = await deleteSettingRow(em, EMAIL_KEY);
  return { ...(await emailSetting(em)), deleted };
}

export async function emailStatus(em: EntityManager) {
  const view = await emailSetting(em);
  return { ...view, configured: view.default_address !== null };
}
