/** The echo workflow's input and result. The API imports this module to read its result, so it holds only plain types. */

export interface EchoInput {
  jobId: string;
  tenant: string;
  message: string;
  requestedBy: string;
}

export interface EchoResult {
  jobId: string;
  message: string;
  workflowId: string;
  recordedAt: string;
}
