/**
 * @silico/sdk: a typed client for the Silico API.
 *
 *   import { Silico } from '@silico/sdk';
 *   const client = new Silico();   // SILICO_API_KEY, SILICO_BASE_URL
 *   const { run, results } = await client.run('platform/sir-epidemic', { inputs: { beta: 0.3 } });
 */
export { Silico, SDK_VERSION, type ClientOptions, type RunOptions, type RunOutcome } from './client.ts';
export { RunHandle, type WaitOptions, type EventsOptions } from './runHandle.ts';
export { InvocationHandle, type InvocationWaitOptions } from './invocationHandle.ts';
export { StudyHandle, type StudyWaitOptions } from './studyHandle.ts';
export {
  SilicoError, ApiError, ValidationError, AuthenticationError, InsufficientCreditsError, PermissionError, NotFoundError,
  ConflictError, IdempotencyConflictError, RateLimitError, NotImplementedError, ServerError, ConnectionError,
  ConnectionTimeoutError, EventStreamUnavailableError, HostingEnded, IntegrityError, InvocationFailed, InvocationTimeout, RunFailed, RunTimeout, StudyNotStarted, StudyTimeout, errorClassFor, errorFromResponse, type ApiErrorBody,
} from './errors.ts';
export type { RequestOptions } from './core/http.ts';
export { Page, PageRequest } from './core/pagination.ts';
export { DEFAULT_RETRY_POLICY, backoffDelayMs, isRetryableStatus, parseRetryAfter, retryDelayMs, type RetryPolicy } from './core/retry.ts';
export type { VerifiedFile } from './core/download.ts';
export { normalizeSha256 } from './core/identity.ts';
export type { VerifiedBytes } from './core/verifiedBytes.ts';
export { verifyPassport, passportOf, passportSignedText, type PassportKey, type PassportVerification, type SignedPassport } from './passportVerify.ts';
export { canonicalJson } from './core/canonicalJson.ts';
export { verifyWebhook, WebhookSignatureError, type VerifyWebhookOptions, type WebhookEventPayload } from './webhookVerify.ts';
export * from './models.ts';
export type * from './types.ts';
export type { RunCreateParams, RunListParams, RunPrepareParams, RunEventsParams, RunStartOptions, DownloadedArtifact, Runs } from './resources/runs.ts';
export type { FileSource, UploadOptions, Files } from './resources/files.ts';
export type { Capability, Capabilities } from './resources/capabilities.ts';
export type { HubRelease, Hub } from './resources/hub.ts';
export type { Lab, Labs } from './resources/labs.ts';
export type { Workspace, Workspaces } from './resources/workspaces.ts';
export type { Petab, PetabImport, PetabImportPlan } from './resources/petab.ts';
export type { ExperimentListParams, ExperimentRunOptions, StudyRunListParams, Experiments } from './resources/experiments.ts';
export type { Session, Sessions } from './resources/sessions.ts';
export type { Dataset, DatasetPageBody, Datasets } from './resources/datasets.ts';
export type { Biology } from './resources/biology.ts';
export type { ComputeProfiles } from './resources/computeProfiles.ts';
export type { Passports } from './resources/passports.ts';
export type { Publications } from './resources/publications.ts';
export type { Hosting, HostingView } from './resources/hosting.ts';
export type { HostedInvocations } from './resources/hostedInvocations.ts';
export type { Account } from './resources/account.ts';
export type { Skills } from './resources/skills.ts';
export type { Webhooks, WebhookEndpoint, WebhookEvent, WebhookDelivery } from './resources/webhooks.ts';
export type { Purchases, Purchase } from './resources/purchases.ts';
