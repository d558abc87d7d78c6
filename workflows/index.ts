// Every workflow the worker hosts. Deterministic code only: no Node builtins, no I/O.
export { maintenanceWorkflow, runSweepWorkflow } from './maintenance.ts';
export { runWorkflow } from './run.ts';
export { publicationWorkflow } from './publication.ts';
export { datasetRegistrationWorkflow } from './datasetRegistration.ts';
export { experimentWorkflow } from './experiment.ts';
export { studyWorkflow } from './study.ts';
export { passportWorkflow } from './passport.ts';
export { hostingLifecycleWorkflow } from './hosting.ts';
export { invocationWorkflow } from './invocation.ts';
export { biologySearchWorkflow, biologyFetchWorkflow } from './biology.ts';
export { sessionWorkflow } from './session.ts';
export { webhookDeliveryWorkflow } from './webhookDelivery.ts';
export { purchaseWorkflow } from './purchase.ts';
export { petabInspectWorkflow } from './petab.ts';
