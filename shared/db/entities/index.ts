import { HandbackRowEntity, ProposalEventRowEntity, ProposalRowEntity } from './action-review.js';
import { AgentRowEntity } from './agents.js';
import { BrandingLogoEntity, EaiAssignmentEntity } from './config-misc.js';
import { CrmConnectionEntity, CrmMergeApprovalEntity } from './crm.js';
import { ConversationMessageEntity, ConversationThreadEntity } from './conversation.js';
import { DeploymentSettingEntity, LlmUsageEntity } from './deployment.js';
import { EchoJobEntity } from './echo-job.js';
import { EtlRunEntity } from './etl.js';
import { PersonalAccessTokenEntity, SandboxTokenEntity, UserEntity } from './identity.js';
import { LlmProviderEntity, LlmSettingsEntity } from './llm.js';
import { FlowRunEntity, FlowRunStepEntity, ManagedFlowEntity } from './managed-flows.js';
import { ManagedSourceEntity, ManagedSourceSyncJobEntity } from './managed-sources.js';
import { DownloadGrantEntity, DownloadEntity, McpOAuthAuthorizationEntity } from './mcp.js';
import { WikiCommentEntity } from './wiki.js';
import { CodeAgentRunEntity } from './code-agent.js';

export * from './action-review.js';
export * from './agents.js';
export * from './config-misc.js';
export * from './conversation.js';
export * from './crm.js';
export * from './deployment.js';
export * from './echo-job.js';
export * from './etl.js';
export * from './identity.js';
export * from './llm.js';
export * from './managed-flows.js';
export * from './managed-sources.js';
export * from './mcp.js';
export * from './wiki.js';
export * from './code-agent.js';

/** Every entity the ORM knows; a new area adds its schemas here. */
export const allEntities = [
  UserEntity,
  PersonalAccessTokenEntity,
  SandboxTokenEntity,
  LlmUsageEntity,
  DeploymentSettingEntity,
  EchoJobEntity,
  ConversationThreadEntity,
  ConversationMessageEntity,
  ProposalRowEntity,
  ProposalEventRowEntity,
  HandbackRowEntity,
  AgentRowEntity,
  McpOAuthAuthorizationEntity,
  DownloadEntity,
  DownloadGrantEntity,
  CrmConnectionEntity,
  CrmMergeApprovalEntity,
  LlmProviderEntity,
  LlmSettingsEntity,
  BrandingLogoEntity,
  EaiAssignmentEntity,
  ManagedSourceEntity,
  ManagedSourceSyncJobEntity,
  EtlRunEntity,
  WikiCommentEntity,
  ManagedFlowEntity,
  CodeAgentRunEntity,
  FlowRunEntity,
  FlowRunStepEntity,
];
