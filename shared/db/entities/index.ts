import { HandbackRowSchema, ProposalEventRowSchema, ProposalRowSchema } from './action-review.js';
import { AgentRowSchema } from './agents.js';
import { CrmConnectionSchema, CrmMergeApprovalSchema } from './crm.js';
import { ConversationMessageSchema, ConversationThreadSchema } from './conversation.js';
import { DeploymentSettingSchema, LlmUsageSchema } from './deployment.js';
import { EchoJobSchema } from './echo-job.js';
import { PersonalAccessTokenSchema, SandboxTokenSchema, UserSchema } from './identity.js';
import { DownloadGrantSchema, DownloadSchema, McpOAuthAuthorizationSchema } from './mcp.js';

export * from './action-review.js';
export * from './agents.js';
export * from './conversation.js';
export * from './crm.js';
export * from './deployment.js';
export * from './echo-job.js';
export * from './identity.js';
export * from './mcp.js';

/** Every entity the ORM knows; a new area adds its schemas here. */
export const allEntities = [
  UserSchema,
  PersonalAccessTokenSchema,
  SandboxTokenSchema,
  LlmUsageSchema,
  DeploymentSettingSchema,
  EchoJobSchema,
  ConversationThreadSchema,
  ConversationMessageSchema,
  ProposalRowSchema,
  ProposalEventRowSchema,
  HandbackRowSchema,
  AgentRowSchema,
  McpOAuthAuthorizationSchema,
  DownloadSchema,
  DownloadGrantSchema,
  CrmConnectionSchema,
  CrmMergeApprovalSchema,
];
