// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Search attributes operators filter on in the Temporal UI, e.g. `ProposalStatus = "reconciliation_required"`.
 * Registered from temporal-config/search-attributes.json; a unit test keeps the two in step.
 */
export const SearchAttributes = {
  tenant: defineSearchAttributeKey('PlatformTenant', SearchAttributeType.KEYWORD),
  resourceId: defineSearchAttributeKey('PlatformResourceId', SearchAttributeType.KEYWORD),
  status: defineSearchAttributeKey('PlatformStatus', SearchAttributeType.KEYWORD),
  proposalStatus: defineSearchAttributeKey('ProposalStatus', SearchAttributeType.KEYWORD),
  actionType: defineSearchAttributeKey('ActionType', SearchAttributeType.KEYWORD),
  missionStatus: defineSearchAttributeKey('MissionStatus', SearchAttributeType.KEYWORD),
  missionWaitingState: defineSearchAttributeKey('MissionWaitingState', SearchAttributeType.KEYWORD),
} as const;
