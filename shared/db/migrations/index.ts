import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122050000Rooms } from './Migration20261122050000Rooms.js';
import { Migration20261122030000Agents } from './Migration20261122030000Agents.js';
import { Migration20261122000000Backbone } from './Migration20261122000000Backbone.js';
import { Migration20261122010000ActionReview } from './Migration20261122010000ActionReview.js';
import { Migration20261122020000McpGateway } from './Migration20261122020000McpGateway.js';
import { Migration20261122040000Crm } from './Migration20261122040000Crm.js';
import { Migration20261123100000Settings } from './Migration20261123100000Settings.js';
import { Migration20261123130000LlmProviders } from './Migration20261123130000LlmProviders.js';
import { Migration20261123110000Secrets } from './Migration20261123110000Secrets.js';
import { Migration20261123120000ConfigMisc } from './Migration20261123120000ConfigMisc.js';
import { Migration20261123150000EmbeddingReindex } from './Migration20261123150000EmbeddingReindex.js';
import { Migration20261123170000SettingsFold } from './Migration20261123170000SettingsFold.js';
import { Migration20261123190000ManagedSources } from './Migration20261123190000ManagedSources.js';
import { Migration20261124030000EtlRuns } from './Migration20261124030000EtlRuns.js';
import { Migration20261124000000ManagedSourceArtifacts } from './Migration20261124000000ManagedSourceArtifacts.js';
import { Migration20261124010000WikiCommentary } from './Migration20261124010000WikiCommentary.js';
import { Migration20261124010100ManagedFlows } from './Migration20261124010100ManagedFlows.js';
import { Migration20261124020000DocumentIndexes } from './Migration20261124020000DocumentIndexes.js';
import { Migration20261124040000ConsoleSessions } from './Migration20261124040000ConsoleSessions.js';
import { Migration20261125010000CodeAgentRuns } from './Migration20261125010000CodeAgentRuns.js';
import { Migration20261125020000Desktop } from './Migration20261125020000Desktop.js';
import { Migration20261125030000HostedIdentityBindings } from './Migration20261125030000HostedIdentityBindings.js';
import { Migration20261125040000Blueprints } from './Migration20261125040000Blueprints.js';
import { Migration20261125050000DocVectorsBinary } from './Migration20261125050000DocVectorsBinary.js';
import { Migration20261125060000ManagedSourceOAuthAgentFields } from './Migration20261125060000ManagedSourceOAuthAgentFields.js';
import { Migration20261125070000AgentSkillPackages } from './Migration20261125070000AgentSkillPackages.js';
import { Migration20261125090000BlueprintVersions } from './Migration20261125090000BlueprintVersions.js';
import { Migration20261125110000Missions } from './Migration20261125110000Missions.js';
import { Migration20261125120000OrganizationalProjects } from './Migration20261125120000OrganizationalProjects.js';
import { Migration20261125130000CodeAgentCli } from './Migration20261125130000CodeAgentCli.js';
import { Migration20261125140000TrackerAutomation } from './Migration20261125140000TrackerAutomation.js';
import { Migration20261125160000ProjectRecords } from './Migration20261125160000ProjectRecords.js';
import { Migration20261125170000DemoVersions } from './Migration20261125170000DemoVersions.js';
import { Migration20261125180000KbStagedEdits } from './Migration20261125180000KbStagedEdits.js';
import { Migration20261125190000BlueprintHidden } from './Migration20261125190000BlueprintHidden.js';
import { Migration20261126000200PresenterSessions } from './Migration20261126000200PresenterSessions.js';
import { Migration20261126000300DesktopLocalClis } from './Migration20261126000300DesktopLocalClis.js';
import { Migration20261126000100TicketRca } from './Migration20261126000100TicketRca.js';
import { Migration20261126000500RemoteBlueprints } from './Migration20261126000500RemoteBlueprints.js';
import { Migration20261126000600BlueprintWipSessions } from './Migration20261126000600BlueprintWipSessions.js';
import { Migration20261126000400MissionWaitingIndex } from './Migration20261126000400MissionWaitingIndex.js';
import { Migration20261126001100ManagedApps } from './Migration20261126001100ManagedApps.js';
import { Migration20261126001200DocIndexAdopted } from './Migration20261126001200DocIndexAdopted.js';
import { Migration20261126002800LlmUsagePurpose } from './Migration20261126002800LlmUsagePurpose.js';
import { Migration20261128120000MissionFailed } from './Migration20261128120000MissionFailed.js';
import { Migration20261129220000KnowledgeBases } from './Migration20261129220000KnowledgeBases.js';
import { Migration20261129220100ProverSubjects } from './Migration20261129220100ProverSubjects.js';
import { Migration20261129330000FlowRuns } from './Migration20261129330000FlowRuns.js';
import { Migration20261129110000MissionBlueprintVersion } from './Migration20261129110000MissionBlueprintVersion.js';
import { Migration20261129110100UserNameClaim } from './Migration20261129110100UserNameClaim.js';
import { Migration20261129110200ManagedSourceMissions } from './Migration20261129110200ManagedSourceMissions.js';
import { Migration20261129770000EgressRegistrations } from './Migration20261129770000EgressRegistrations.js';
import { Migration20261129990000AgentKnowledgeBasesCascade } from './Migration20261129990000AgentKnowledgeBasesCascade.js';
import { Migration20261129991700DocHnswPerIndex } from './Migration20261129991700DocHnswPerIndex.js';
import { Migration20261130010000LocalHashing1536 } from './Migration20261130010000LocalHashing1536.js';
import { Migration20261130020000DocVectorChanges } from './Migration20261130020000DocVectorChanges.js';
import { Migration20261130030000DocNativeVectorsCompressed } from './Migration20261130030000DocNativeVectorsCompressed.js';
import { Migration20261130040000ActionReviewIdempotencyKeys } from './Migration20261130040000ActionReviewIdempotencyKeys.js';
import { Migration20261130050000DocHnswBuildRequested } from './Migration20261130050000DocHnswBuildRequested.js';
import { Migration20261129130000DocVectorLogActiveOnly } from './Migration20261129130000DocVectorLogActiveOnly.js';
import { Migration20261129550000DocVectorLog } from './Migration20261129550000DocVectorLog.js';
import { Migration20261129560000DocNativeVectors } from './Migration20261129560000DocNativeVectors.js';
import { Migration20261129440000ThreadEvents } from './Migration20261129440000ThreadEvents.js';
import { Migration20261129440100ActionReviewStatementRefs } from './Migration20261129440100ActionReviewStatementRefs.js';

/** Checked-in migrations, oldest first. Listed explicitly so no file globbing is needed at run time. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000000Backbone', class: Migration20261122000000Backbone },
  { name: 'Migration20261122010000ActionReview', class: Migration20261122010000ActionReview },
  { name: 'Migration20261122030000Agents', class: Migration20261122030000Agents },
  { name: 'Migration20261122020000McpGateway', class: Migration20261122020000McpGateway },
  { name: 'Migration20261122050000Rooms', class: Migration20261122050000Rooms },
  { name: 'Migration20261122040000Crm', class: Migration20261122040000Crm },
  { name: 'Migration20261123100000Settings', class: Migration20261123100000Settings },
  { name: 'Migration20261123110000Secrets', class: Migration20261123110000Secrets },
  { name: 'Migration20261123120000ConfigMisc', class: Migration20261123120000ConfigMisc },
  { name: 'Migration20261123130000LlmProviders', class: Migration20261123130000LlmProviders },
  { name: 'Migration20261123150000EmbeddingReindex', class: Migration20261123150000EmbeddingReindex },
  { name: 'Migration20261123170000SettingsFold', class: Migration20261123170000SettingsFold },
  { name: 'Migration20261123190000ManagedSources', class: Migration20261123190000ManagedSources },
  { name: 'Migration20261124000000ManagedSourceArtifacts', class: Migration20261124000000ManagedSourceArtifacts },
  { name: 'Migration20261124010000WikiCommentary', class: Migration20261124010000WikiCommentary },
  { name: 'Migration20261124010100ManagedFlows', class: Migration20261124010100ManagedFlows },
  { name: 'Migration20261124020000DocumentIndexes', class: Migration20261124020000DocumentIndexes },
  { name: 'Migration20261124030000EtlRuns', class: Migration20261124030000EtlRuns },
  { name: 'Migration20261124040000ConsoleSessions', class: Migration20261124040000ConsoleSessions },
  { name: 'Migration20261125010000CodeAgentRuns', class: Migration20261125010000CodeAgentRuns },
  { name: 'Migration20261125020000Desktop', class: Migration20261125020000Desktop },
  { name: 'Migration20261125030000HostedIdentityBindings', class: Migration20261125030000HostedIdentityBindings },
  { name: 'Migration20261125040000Blueprints', class: Migration20261125040000Blueprints },
  { name: 'Migration20261125050000DocVectorsBinary', class: Migration20261125050000DocVectorsBinary },
  {
    name: 'Migration20261125060000ManagedSourceOAuthAgentFields',
    class: Migration20261125060000ManagedSourceOAuthAgentFields,
  },
  { name: 'Migration20261125070000AgentSkillPackages', class: Migration20261125070000AgentSkillPackages },
  { name: 'Migration20261125090000BlueprintVersions', class: Migration20261125090000BlueprintVersions },
  { name: 'Migration20261125110000Missions', class: Migration20261125110000Missions },
  { name: 'Migration20261125120000OrganizationalProjects', class: Migration20261125120000OrganizationalProjects },
  { name: 'Migration20261125130000CodeAgentCli', class: Migration20261125130000CodeAgentCli },
  { name: 'Migration20261125140000TrackerAutomation', class: Migration20261125140000TrackerAutomation },
  { name: 'Migration20261125160000ProjectRecords', class: Migration20261125160000ProjectRecords },
  { name: 'Migration20261125170000DemoVersions', class: Migration20261125170000DemoVersions },
  { name: 'Migration20261125180000KbStagedEdits', class: Migration20261125180000KbStagedEdits },
  { name: 'Migration20261125190000BlueprintHidden', class: Migration20261125190000BlueprintHidden },
  { name: 'Migration20261126000100TicketRca', class: Migration20261126000100TicketRca },
  { name: 'Migration20261126000200PresenterSessions', class: Migration20261126000200PresenterSessions },
  { name: 'Migration20261126000300DesktopLocalClis', class: Migration20261126000300DesktopLocalClis },
  { name: 'Migration20261126000400MissionWaitingIndex', class: Migration20261126000400MissionWaitingIndex },
  { name: 'Migration20261126000500RemoteBlueprints', class: Migration20261126000500RemoteBlueprints },
  { name: 'Migration20261126000600BlueprintWipSessions', class: Migration20261126000600BlueprintWipSessions },
  { name: 'Migration20261126001100ManagedApps', class: Migration20261126001100ManagedApps },
  { name: 'Migration20261126001200DocIndexAdopted', class: Migration20261126001200DocIndexAdopted },
  { name: 'Migration20261126002800LlmUsagePurpose', class: Migration20261126002800LlmUsagePurpose },
  { name: 'Migration20261128120000MissionFailed', class: Migration20261128120000MissionFailed },
  { name: 'Migration20261129110000MissionBlueprintVersion', class: Migration20261129110000MissionBlueprintVersion },
  { name: 'Migration20261129110100UserNameClaim', class: Migration20261129110100UserNameClaim },
  { name: 'Migration20261129110200ManagedSourceMissions', class: Migration20261129110200ManagedSourceMissions },
  { name: 'Migration20261129130000DocVectorLogActiveOnly', class: Migration20261129130000DocVectorLogActiveOnly },
  { name: 'Migration20261129220000KnowledgeBases', class: Migration20261129220000KnowledgeBases },
  { name: 'Migration20261129220100ProverSubjects', class: Migration20261129220100ProverSubjects },
  { name: 'Migration20261129330000FlowRuns', class: Migration20261129330000FlowRuns },
  { name: 'Migration20261129440000ThreadEvents', class: Migration20261129440000ThreadEvents },
  { name: 'Migration20261129440100ActionReviewStatementRefs', class: Migration20261129440100ActionReviewStatementRefs },
  { name: 'Migration20261129550000DocVectorLog', class: Migration20261129550000DocVectorLog },
  { name: 'Migration20261129560000DocNativeVectors', class: Migration20261129560000DocNativeVectors },
  { name: 'Migration20261129770000EgressRegistrations', class: Migration20261129770000EgressRegistrations },
  {
    name: 'Migration20261129990000AgentKnowledgeBasesCascade',
    class: Migration20261129990000AgentKnowledgeBasesCascade,
  },
  { name: 'Migration20261129991700DocHnswPerIndex', class: Migration20261129991700DocHnswPerIndex },
  { name: 'Migration20261130010000LocalHashing1536', class: Migration20261130010000LocalHashing1536 },
  { name: 'Migration20261130020000DocVectorChanges', class: Migration20261130020000DocVectorChanges },
  {
    name: 'Migration20261130030000DocNativeVectorsCompressed',
    class: Migration20261130030000DocNativeVectorsCompressed,
  },
  {
    name: 'Migration20261130040000ActionReviewIdempotencyKeys',
    class: Migration20261130040000ActionReviewIdempotencyKeys,
  },
  { name: 'Migration20261130050000DocHnswBuildRequested', class: Migration20261130050000DocHnswBuildRequested },
];
