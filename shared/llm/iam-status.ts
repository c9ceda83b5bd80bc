import { awsCredentialsOf, getCallerIdentity } from '../aws/credentials.js';
import type { AppConfig } from '../config.js';
import { LlmError } from './client.js';

/** `GET /api/config/bedrock/iam-status`: what the deployment's AWS credentials are, and (refreshed) whether STS accepts them. */
export interface IamStatus {
  credentials_available: boolean;
  source: 'environment' | null;
  /** The access key id with all but its last four characters masked. */
  access_key_id: string | null;
  session_token: boolean;
  /** true: STS accepted them; false: refused; null: not verified yet (`refresh=true` verifies). */
  verified: boolean | null;
  identity: { account: string; arn: string } | null;
  message: string;
  checked_at: string;
}

/** STS never gets longer than this from an admin's status request. */
const VERIFY_TIMEOUT_MS = 10_000;

/** Readings per deployment configuration and region; `refresh=false` answers the cached one. */
const readings = new WeakMap<AppConfig, Map<string, IamStatus>>();

export async function iamStatus(
  config: AppConfig,
  region: string,
  refresh: boolean,
): Promise<IamStatus & { cached: boolean }> {
  let perRegion = readings.get(config);
  if (!perRegion) readings.set(config, (perRegion = new Map()));
  const cached = perRegion.get(region);
  if (cached && !refresh) return { ...cached, cached: true };
  const reading = await readStatus(config, region, refresh);
  perRegion.set(region, reading);
  return { ...reading, cached: false };
}

/** The fields of a status without credentials to read. */
export const NO_CREDENTIALS = {
  credentials_available: false,
  source: null,
  access_key_id: null,
  session_token: false,
  verified: null,
  identity: null,
} as const;

async function readStatus(config: AppConfig, region: string, verify: boolean): Promise<IamStatus> {
  const credentials = awsCredentialsOf(config.aws);
  const checked_at = new Date().toISOString();
  if (!credentials)
    return {
      ...NO_CREDENTIALS,
      message:
        'No AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials).',
      checked_at,
    };
  const base = {
    credentials_available: true,
    source: 'environment' as const,
    access_key_id: `${'*'.repeat(Math.max(0, credentials.accessKeyId.length - 4))}${credentials.accessKeyId.slice(-4)}`,
    session_token: !!credentials.sessionToken,
    checked_at,
  };
  if (!verify)
    return {
      ...base,
      verified: null,
      identity: null,
      message: 'AWS credentials are set; refresh=true verifies them with STS.',
    };
  try {
    const id = await getCallerIdentity(config.aws, credentials, region, config.egress, VERIFY_TIMEOUT_MS);
    return {
      ...base,
      verified: true,
      identity: { account: id.account, arn: id.arn },
      message: `STS accepted the credentials (${id.arn}).`,
    };
  } catch (err) {
    if (!(err instanceof LlmError)) throw err;
    return { ...base, verified: false, identity: null, message: err.failure.message };
  }
}
