import { DeploymentSettingSchema, LlmUsageSchema } from './deployment.js';
import { EchoJobSchema } from './echo-job.js';
import { PersonalAccessTokenSchema, SandboxTokenSchema, UserSchema } from './identity.js';

export * from './deployment.js';
export * from './echo-job.js';
export * from './identity.js';

/** Every entity the ORM knows; a new area adds its schemas here. */
export const allEntities = [
  UserSchema,
  PersonalAccessTokenSchema,
  SandboxTokenSchema,
  LlmUsageSchema,
  DeploymentSettingSchema,
  EchoJobSchema,
];
