import type { AppConfig } from '../config.js';
import type { EgressPolicy } from '../http/egress.js';
import { llmFailure, providerCall } from '../llm/client.js';
import { signV4, type AwsCredentials } from './sigv4.js';

export type AwsSettings = AppConfig['aws'];

/** The deployment's AWS credentials (the standard environment variables), or null when incomplete. */
export function awsCredentialsOf(aws: AwsSettings | undefined): AwsCredentials | null {
  if (!aws?.accessKeyId || !aws.secretAccessKey) return null;
  return { accessKeyId: aws.accessKeyId, secretAccessKey: aws.secretAccessKey, sessionToken: aws.sessionToken };
}

/** The Bedrock runtime of a region (or `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`). */
export const bedrockRuntimeEndpoint = (aws: AwsSettings | undefined, region: string) =>
  aws?.bedrockRuntimeEndpoint ?? `https://bedrock-runtime.${region}.amazonaws.com`;

/** The regional STS endpoint (or `AWS_ENDPOINT_URL_STS`). */
export const stsEndpoint = (aws: AwsSettings | undefined, region: string) =>
  aws?.stsEndpoint ?? `https://sts.${region}.amazonaws.com`;

/** A signer for `providerCall`: SigV4 over the exact method, URL, headers and body sent. */
export function sigV4Signer(credentials: AwsCredentials, region: string, service: string) {
  return (request: { method: string; url: URL; headers: Record<string, string>; body: string }) =>
    signV4({ ...request, region, service, credentials }).headers;
}

export interface CallerIdentity {
  account: string;
  arn: string;
  userId: string;
}

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

/**
 * STS `GetCallerIdentity` (query API, form body, SigV4 service `sts`): proves the credentials are
 * valid without any permission. Answers the identity, or throws a classified `LlmError` whose
 * message carries AWS's error code (never the raw answer).
 */
export async function getCallerIdentity(
  aws: AwsSettings | undefined,
  credentials: AwsCredentials,
  region: string,
  egress: EgressPolicy,
  timeoutMs: number,
): Promise<CallerIdentity> {
  const answer = await providerCall(`${stsEndpoint(aws, region)}/`, {
    egress,
    timeoutMs,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: 'Action=GetCallerIdentity&Version=2011-06-15',
    sign: sigV4Signer(credentials, region, 'sts'),
    addressSetting: 'AWS_ENDPOINT_URL_STS',
  });
  if (answer.status >= 400) {
    const code = tag(answer.text, 'Code') ?? `HTTP ${answer.status}`;
    throw llmFailure(
      answer.status === 403 || answer.status === 401 ? 'authentication' : 'unavailable',
      `AWS STS refused the credentials (${code}).`,
      'Check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN of the deployment.',
      answer.status >= 500,
      answer.text.slice(0, 500),
    );
  }
  const account = tag(answer.text, 'Account');
  const arn = tag(answer.text, 'Arn');
  if (!account || !arn)
    throw llmFailure(
      'bad_response',
      'AWS STS answered without a caller identity.',
      'Check AWS_ENDPOINT_URL_STS.',
      false,
      answer.text.slice(0, 500),
    );
  return { account, arn, userId: tag(answer.text, 'UserId') ?? '' };
}
