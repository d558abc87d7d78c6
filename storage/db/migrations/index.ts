import type { Knex } from 'knex';
import * as foundation from './001_foundation.ts';
import * as authChangeNotify from './002_auth_change_notify.ts';
import * as unloggedRateLimits from './003_unlogged_rate_limits.ts';
import * as runs from './004_runs.ts';
import * as releaseRuntimeProblems from './005_release_runtime_problems.ts';
import * as workspaces from './006_workspaces.ts';
import * as releaseFiles from './007_release_files.ts';
import * as managedRuns from './008_managed_runs.ts';
import * as releaseTree from './009_release_tree.ts';
import * as publications from './010_publications.ts';
import * as files from './011_files.ts';
import * as datasets from './012_datasets.ts';
import * as fileObjectKey from './013_file_object_key.ts';
import * as publicationGrants from './014_publication_grants.ts';
import * as runEventNotify from './015_run_event_notify.ts';
import * as runPathFunctions from './016_run_path_functions.ts';
import * as runOutputsFromExecution from './017_run_outputs_from_execution.ts';
import * as teamMembersHubListing from './018_team_members_hub_listing.ts';
import * as unacceptRun from './019_unaccept_run.ts';
import * as experiments from './020_experiments.ts';
import * as passports from './021_passports.ts';
import * as hosting from './022_hosting.ts';
import * as hostedInvocations from './023_hosted_invocations.ts';
import * as sessions from './026_sessions.ts';
import * as webhooks from './027_webhooks.ts';
import * as runReuse from './028_run_reuse.ts';
import * as spendCaps from './029_spend_caps.ts';
import * as spendCapsEverywhere from './030_spend_caps_everywhere.ts';
import * as invocationCaps from './031_invocation_caps.ts';
import * as reuseNewest from './032_reuse_newest.ts';
import * as environments from './033_environments.ts';
import * as runCancelNotify from './034_run_cancel_notify.ts';
import * as runAliveAt from './035_run_alive_at.ts';
import * as appendRunEvents from './036_append_run_events.ts';
import * as sessionFailed from './037_session_failed.ts';
import * as terminalEventLast from './038_terminal_event_last.ts';
import * as mcpTasks from './039_mcp_tasks.ts';
import * as studyKinds from './040_study_kinds.ts';
import * as purchases from './041_purchases.ts';
import * as invocationCancelNotify from './042_invocation_cancel_notify.ts';
import * as acceptRunRunning from './043_accept_run_running.ts';
import * as acceptExperimentRuns from './044_accept_experiment_runs.ts';
import * as studyRunsAtOnce from './051_study_runs_at_once.ts';
import * as recordArtifact from './052_record_artifact.ts';
import * as loneRunNotify from './053_lone_run_notify.ts';
import * as studyReservation from './054_study_reservation.ts';
import * as studyRunIds from './055_study_run_ids.ts';
import * as studyRunsEndedAtOnce from './056_study_runs_ended_at_once.ts';
import * as studyRunsInSlices from './057_study_runs_in_slices.ts';
import * as perRunTableSamples from './058_per_run_table_samples.ts';
import * as invocationWorkflowOnDemand from './059_invocation_workflow_on_demand.ts';
import * as rateCountingAlone from './060_rate_counting_alone.ts';
import * as runPathFewerUpdates from './061_run_path_fewer_updates.ts';
import * as computeProfilesNotify from './045_compute_profiles_notify.ts';
import * as releasesNotify from './046_releases_notify.ts';
import * as petabImports from './047_petab_imports.ts';
import * as petabCalibrations from './048_petab_calibrations.ts';
import * as environmentArchives from './049_environment_archives.ts';
import * as biologyResources from './025_biology_resources.ts';

interface Migration { up(k: Knex): Promise<void>; down(k: Knex): Promise<void> }

// Migrations are listed here rather than discovered on disk, so the same list works
// with Node running the TypeScript, in a bundle, and from any working directory.
const migrations: Record<string, Migration> = {
  '001_foundation': foundation,
  '002_auth_change_notify': authChangeNotify,
  '003_unlogged_rate_limits': unloggedRateLimits,
  '004_runs': runs,
  '005_release_runtime_problems': releaseRuntimeProblems,
  '006_workspaces': workspaces,
  '007_release_files': releaseFiles,
  '008_managed_runs': managedRuns,
  '009_release_tree': releaseTree,
  '010_publications': publications,
  '011_files': files,
  '012_datasets': datasets,
  '013_file_object_key': fileObjectKey,
  '014_publication_grants': publicationGrants,
  '015_run_event_notify': runEventNotify,
  '016_run_path_functions': runPathFunctions,
  '017_run_outputs_from_execution': runOutputsFromExecution,
  '018_team_members_hub_listing': teamMembersHubListing,
  '019_unaccept_run': unacceptRun,
  '020_experiments': experiments,
  '021_passports': passports,
  '022_hosting': hosting,
  '023_hosted_invocations': hostedInvocations,
  '025_biology_resources': biologyResources,
  '026_sessions': sessions,
  '027_webhooks': webhooks,
  '028_run_reuse': runReuse,
  '029_spend_caps': spendCaps,
  '030_spend_caps_everywhere': spendCapsEverywhere,
  '031_invocation_caps': invocationCaps,
  '032_reuse_newest': reuseNewest,
  '033_environments': environments,
  '034_run_cancel_notify': runCancelNotify,
  '035_run_alive_at': runAliveAt,
  '036_append_run_events': appendRunEvents,
  '037_session_failed': sessionFailed,
  '038_terminal_event_last': terminalEventLast,
  '039_mcp_tasks': mcpTasks,
  '040_study_kinds': studyKinds,
  '041_purchases': purchases,
  '042_invocation_cancel_notify': invocationCancelNotify,
  '043_accept_run_running': acceptRunRunning,
  '044_accept_experiment_runs': acceptExperimentRuns,
  '045_compute_profiles_notify': computeProfilesNotify,
  '046_releases_notify': releasesNotify,
  '047_petab_imports': petabImports,
  '048_petab_calibrations': petabCalibrations,
  '049_environment_archives': environmentArchives,
  '051_study_runs_at_once': studyRunsAtOnce,
  '052_record_artifact': recordArtifact,
  '053_lone_run_notify': loneRunNotify,
  '054_study_reservation': studyReservation,
  '055_study_run_ids': studyRunIds,
  '056_study_runs_ended_at_once': studyRunsEndedAtOnce,
  '057_study_runs_in_slices': studyRunsInSlices,
  '058_per_run_table_samples': perRunTableSamples,
  '059_invocation_workflow_on_demand': invocationWorkflowOnDemand,
  '060_rate_counting_alone': rateCountingAlone,
  '061_run_path_fewer_updates': runPathFewerUpdates,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
