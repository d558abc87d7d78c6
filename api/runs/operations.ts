import { blobKey } from '../../storage/objects.ts';
import { PassThrough } from 'node:stream';
import { choose, NEW_IDEMPOTENCY_KEY, type NextStep, type ToolDef, type ToolContext } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { prepareRun, recheckProposal, type RunProposal } from './prepare.ts';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';
import { acceptRun, earlierRun, runIdFor } from './accept.ts';
import { whenEnded } from '../preferWait.ts';
import { runView, artifactView } from './view.ts';
import { redirectQuery, redirectToStore, runArtifactDirectDownload, runArtifactDownloadable } from '../artifactUrls.ts';

/** `direct=true`: list a presigned URL of the object store beside each downloadable artifact's `download_url`. */
const directQuery = { type: 'boolean', description: 'With true, where the deployment offers direct downloads: each downloadable artifact also lists `direct_download`, a short-lived presigned URL of the object store.' } as const;
import { approvedPlan, planView, PLAN_TTL_SECONDS } from '../plans.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { getRun, listRuns, listEvents, listArtifacts, getArtifact, markRunCancelling, TERMINAL, MAX_EVENT_SEQ, type RunEvent, type RunRow } from '../../storage/db/runs.ts';
import { digestJson } from '../../storage/digest.ts';
import { cancelQueuedRun } from '../../storage/runLifecycle.ts';
import { isoTime } from '../../storage/ids.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { askRunToStop } from './stop.ts';
import { str, uuid, digestInput, limit, cursor, nullableStr, id } from '../schemas/common.ts';
// RFC 6266: an ASCII fallback name plus the exact name as filename* (RFC 5987).
import contentDisposition from 'content-disposition';
import { RUN_STATUSES, artifactMetadata, environmentAsOf, runEventPage, runPage, runPlan, runRecord, runResults } from './schemas.ts';
import { pastDay } from './environment.ts';

/** Inputs of a run: an object keyed by the capability's declared input names. */
const inputs = { type: 'object', maxProperties: 256 };
const metadata = { type: 'object', maxProperties: 32, additionalProperties: { type: 'string', maxLength: 500 }, propertyNames: { maxLength: 40 } };
const runStatus = { enum: [...RUN_STATUSES] };
const runPath = { run_id: uuid };
/** Seed of the run's random streams (chosen at plan time when absent): equal seeds, equal results. */
const seed = { type: 'integer', minimum: 0, maximum: 2147483646 };
/** Answer from an identical completed run of the account at no cost (off unless asked). */
const reuse = { type: 'boolean', description: 'Answer from an identical completed run (same package, inputs, seed, compute profile and runtime) at no cost; without a seed, any identical run\'s seed is taken. Default false.' };

export const runTools: ToolDef[] = [
  {
    name: 'run_prepare', scope: 'runs:write', readOnly: true,
    description: 'Check a simulation before running: resolve the capability or workspace revision, validate inputs against its contract, price it, and return findings and a plan digest. No compute starts and nothing is reserved. (run_create\'s direct form names capability_ref and compute_profile_id `ref` and `compute_profile`.)',
    input: {
      body: {
        type: 'object', additionalProperties: false,
        properties: {
          capability_ref: str(200, { minLength: 1 }), workspace_id: uuid, revision_id: uuid, inputs,
          compute_profile_id: str(64), max_runtime_seconds: { type: 'integer', minimum: 1 }, seed, reuse, environment_as_of: environmentAsOf,
        },
        oneOf: [{ required: ['capability_ref'] }, { required: ['workspace_id', 'revision_id'] }],
      },
    },
    output: runPlan,
  },
  {
    name: 'run_create', scope: 'runs:write', readOnly: false, idempotent: true,
    description: 'Start an approved simulation: an approved plan {plan_id, plan_sha256}, or a direct request {ref, inputs, compute_profile, metadata} prepared and executed in one step (`ref` and `compute_profile` are run_prepare\'s capability_ref and compute_profile_id). Requires an idempotency_key.',
    input: {
      body: {
        type: 'object', additionalProperties: false,
        properties: {
          plan_id: uuid, plan_sha256: digestInput, ref: str(200, { minLength: 1 }), inputs, compute_profile: str(64), metadata,
          max_runtime_seconds: { type: 'integer', minimum: 1 }, seed, reuse, environment_as_of: environmentAsOf,
        },
        oneOf: [{ required: ['plan_id', 'plan_sha256'] }, { required: ['ref'] }],
      },
    },
    output: runRecord,
  },
  {
    name: 'run_list', scope: 'runs:read', readOnly: true,
    description: 'List my simulations, newest first, filtered by status, capability, experiment or metadata.',
    input: { query: { status: runStatus, capability: nullableStr(200), experiment_id: nullableStr(64), limit, cursor }, queryPatterns: { '^metadata\\[[^\\]]{1,40}\\]$': { type: 'string', maxLength: 500 } } },
    output: runPage,
  },
  { name: 'run_get', scope: 'runs:read', readOnly: true, description: 'Check simulation progress and results.', input: { path: runPath }, output: runRecord },
  { name: 'run_cancel', scope: 'runs:write', readOnly: false, idempotent: true, destructive: true, description: 'Cancel a simulation; only elapsed compute is charged. Terminal runs are unchanged.', input: { path: runPath }, output: runRecord },
  {
    name: 'run_events', scope: 'runs:read', readOnly: true,
    description: "Read a simulation's log as ordered events (or stream them as server-sent events).",
    input: { path: runPath, query: { after: { type: 'integer', minimum: 0, maximum: MAX_EVENT_SEQ }, limit: { type: 'integer', minimum: 1, maximum: 1000 } } },
    output: runEventPage,
  },
  {
    name: 'run_results', scope: 'runs:read', readOnly: true, description: 'Get the public results of a run: outputs, hashed artifacts and provenance.',
    input: { path: runPath, query: { direct: directQuery } }, output: runResults,
  },
  {
    name: 'run_artifact_download', scope: 'runs:read', readOnly: true,
    description: 'Download a public artifact of a run; hash the bytes before interpreting them.',
    input: { path: { ...runPath, artifact_id: id('art') }, query: { redirect: redirectQuery } },
    output: 'bytes',
  },
  {
    name: 'run_artifact_get', scope: 'runs:read', readOnly: true,
    description: 'Read simulation result metadata of one artifact.',
    input: { path: { ...runPath, artifact_id: id('art') }, query: { direct: directQuery } },
    output: artifactMetadata,
  },
];

/** Where a workspace revision that ran goes next: a study of it, or a release. */
function revisionRan(workspaceId: string, revisionId: string): NextStep[] {
  return [
    {
      tool: 'experiment_prepare', description: 'Study this revision: its sensitivity to its parameters (Sobol\' or Morris), or its calibration to a dataset.',
      arguments: { name: choose('a name for the study'), lab: { workspace_id: workspaceId, revision_id: revisionId }, sensitivity: choose('{parameters: [{input, low, high}], outputs: [{output, summary}], method, base_sample}') },
    },
    { tool: 'publish_prepare', description: 'Check this revision as a release (the publishing-labs skill).', arguments: { workspace_id: workspaceId, revision_id: revisionId, version: choose('a semantic version above the lab\'s last release, e.g. 1.0.0') } },
  ];
}

/** What POST /runs answers: the run, and where to follow it. */
function runCreated(run: RunRow) {
  // Answered once it ended (`Prefer: wait`): what comes next is its results.
  if (TERMINAL.includes(run.status)) return runAnswer(run);
  return {
    body: runView(run),
    next_actions: [
      { tool: 'run_get', description: 'Check progress.', arguments: { run_id: run.id } },
      { tool: 'run_events', description: 'Follow the log.', arguments: { run_id: run.id } },
    ],
  };
}

/** A run as GET /runs/{id} answers it, with the step that comes next for it. */
function runAnswer(run: RunRow) {
  return {
    body: runView(run),
    next_actions: TERMINAL.includes(run.status)
      ? [{ tool: 'run_results', description: 'Read outputs and hashed artifacts.', arguments: { run_id: run.id } }]
      : [{ tool: 'run_events', description: 'Follow the log.', arguments: { run_id: run.id } }],
  };
}

async function ownedRun(ctx: ToolContext, runId: string) {
  const run = await getRun(ctx.deps.db, runId, ctx.caller.account.id);
  if (!run) throw errors.notFound('run_not_found', 'run', 'run_id');
  return run;
}

function eventView(e: RunEvent) {
  return { seq: e.seq, at: isoTime(e.at), type: e.type, message: e.message, data: e.data };
}

const HANDLERS: Record<string, ToolDef['handler']> = {
  async run_prepare(input, ctx) {
    const { proposal, findings } = await prepareRun(ctx.deps, ctx.caller, {
      ref: input.capability_ref, refParam: 'capability_ref',
      workspace: input.capability_ref !== undefined ? undefined : { workspaceId: input.workspace_id, revisionId: input.revision_id }, inputs: input.inputs ?? {},
      profileId: input.compute_profile_id, profileParam: 'compute_profile_id', maxRuntimeSeconds: input.max_runtime_seconds, seed: input.seed, reuse: input.reuse, caps: true,
      environmentAsOf: pastDay(input.environment_as_of, 'environment_as_of'),
    });
    const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'run', proposal, findings, ttlSeconds: PLAN_TTL_SECONDS });
    return {
      body: {
        object: 'run_plan', ...planView(plan), estimated_max_usd: microsToUsd(proposal.estimated_max_micros),
        resolved_ref: proposal.resolved_ref, package_sha256: proposal.package_sha256, compute_profile: proposal.compute_profile,
        max_runtime_seconds: proposal.max_runtime_seconds, reuse_of: proposal.reuse_of ? { run_id: proposal.reuse_of } : null,
        environment: proposal.environment ?? null,
      },
      next_actions: plan.status === 'ready'
        ? [{ tool: 'run_create', description: 'After the user approves this digest and price, start the run.', arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256, idempotency_key: NEW_IDEMPOTENCY_KEY } }]
        : [],
    };
  },

  async run_create(input, ctx) {
    const runId = runIdFor(ctx.caller.account.id, ctx.idempotencyKey);
    // `Prefer: wait=N`: answered once it has ended, when that is within N seconds.
    const notices = ctx.waitMs ? ctx.deps.runEvents.subscribe(runId) : undefined;
    try {
      let run: RunRow;
      let accepted = true;
      try {
        run = await createRun(input, ctx, runId);
      } catch (err) {
        // A retry whose earlier attempt recorded the run (its answer lost) answers that run,
        // whatever this attempt ran into: its plan is used, its reservation taken, its id
        // (runIdFor) recorded. Looked for only here, so a new run pays no read for it.
        const earlier = await earlierRun(ctx.deps, ctx.caller.account.id, runId);
        if (!earlier) throw err;
        run = earlier;
        accepted = false;
      }
      const read = () => getRun(ctx.deps.db, runId, ctx.caller.account.id);
      return runCreated(notices ? await whenEnded(ctx, run, ctx.waitMs!, notices, { read, ended: (r) => TERMINAL.includes(r.status), accepted, ownNotices: true }) : run);
    } finally {
      notices?.close();
    }
  },

  async run_get(input, ctx) {
    return runAnswer(await ownedRun(ctx, input.run_id));
  },

  async run_list(input, ctx) {
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(input)) {
      const m = /^metadata\[(.+)\]$/.exec(k);
      if (m) metadata[m[1]!] = String(Array.isArray(v) ? v[0] : v);
    }
    const page = await listRuns(ctx.deps.db, ctx.caller.account.id, {
      status: input.status, capability: input.capability ?? undefined, experimentId: input.experiment_id ?? undefined, metadata,
      limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'uuid']),
    });
    return { body: pageBody(page, page.rows.map(runView)) };
  },

  async run_cancel(input, ctx) {
    let run = await ownedRun(ctx, input.run_id);
    if (TERMINAL.includes(run.status)) return { body: runView(run), warnings: [{ code: 'run_terminal', message: `The run is already ${run.status}; nothing changed.` }] };
    // Temporal first: if it cannot be reached the answer is 503 and the run is shown as it
    // is (never cancelling with nobody to finish it); a retry sends the request again.
    await askRunToStop(ctx, run);
    // A run that has not begun ends here: a study's waiting runs have no workflow yet.
    // One that began is marked cancelling and its workflow records the ending; when it
    // began after the first request, that request found no workflow, so it goes again.
    if ((await cancelQueuedRun(ctx.deps.db, run.id)) === 'running') {
      await markRunCancelling(ctx.deps.db, run.id);
      if (run.status === 'queued') await askRunToStop(ctx, run);
    }
    run = (await getRun(ctx.deps.db, run.id))!;
    return { body: runView(run) };
  },

  async run_events(input, ctx) {
    const run = await ownedRun(ctx, input.run_id);
    // A Last-Event-ID that no event of ours could carry is ignored, as a browser would send none.
    const lastId = Number(ctx.http?.lastEventId);
    const after = Number.isInteger(lastId) && lastId >= 0 && lastId <= MAX_EVENT_SEQ ? lastId : (input.after ?? 0);
    if (ctx.http?.accept.includes('text/event-stream')) return { body: {}, raw: { contentType: 'text/event-stream', headers: { 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' }, body: eventStream(ctx, run.id, after) } };
    const limit = input.limit ?? 100;
    const items = await listEvents(ctx.deps.db, run.id, after, limit + 1);
    const page = items.slice(0, limit);
    return { body: { items: page.map(eventView), has_more: items.length > limit, next_after: page.length ? page[page.length - 1]!.seq : after } };
  },

  async run_results(input, ctx) {
    const run = await ownedRun(ctx, input.run_id);
    const artifacts = (await listArtifacts(ctx.deps.db, run.id)).filter((a) => a.public);
    return {
      body: {
        run_id: run.id, status: run.status, outputs: run.outputs ?? {},
        artifacts: await Promise.all(artifacts.map(async (a) => artifactView(a, ctx.deps.config.baseUrl, await runArtifactDirectDownload(ctx.deps.directDownloads, a, input.direct === true)))),
        provenance: {
          ref: run.ref, resolved_ref: run.resolved_ref, package_sha256: run.package_sha256, inputs_sha256: digestJson(run.inputs),
          compute_profile: run.compute_profile, seed: run.seed, started_at: isoTime(run.started_at), finished_at: isoTime(run.finished_at),
          // The environment lock it ran in (docs/decisions.md: environments), when recorded.
          ...(run.runtime_sha256 ? { environment_lock_sha256: run.runtime_sha256 } : {}),
          // Only on a reused run (issue 21): the rest is the provenance docs/contract/gaps.md lists.
          ...(run.reused_from ? { reused_from: run.reused_from } : {}),
        },
      },
      warnings: run.status === 'completed' ? [{ code: 'not_validation', message: 'Completion is not scientific validation; hash artifacts before interpreting them.' }] : [],
      next_actions: run.status === 'completed' && run.workspace_id && run.revision_id ? revisionRan(run.workspace_id, run.revision_id) : [],
    };
  },

  async run_artifact_get(input, ctx) {
    const run = await ownedRun(ctx, input.run_id);
    const a = await getArtifact(ctx.deps.db, run.id, input.artifact_id);
    if (!a) throw errors.notFound('artifact_not_found', 'artifact', 'artifact_id');
    const direct = await runArtifactDirectDownload(ctx.deps.directDownloads, a, input.direct === true);
    return { body: { ...artifactView(a, ctx.deps.config.baseUrl, direct), public: a.public, created_at: isoTime(a.created_at) } };
  },

  async run_artifact_download(input, ctx) {
    const run = await ownedRun(ctx, input.run_id);
    const a = await getArtifact(ctx.deps.db, run.id, input.artifact_id);
    // The rule every listing's download_url follows (api/artifactUrls.ts): a private one is never served.
    if (!a || !runArtifactDownloadable(a)) throw errors.notFound('artifact_not_found', 'artifact', 'artifact_id');
    const redirected = await redirectToStore(ctx.deps.directDownloads, input.redirect, blobKey(a.sha256), a.file_name, a.content_type);
    if (redirected) return redirected;
    // Streamed: an artifact may be as large as a lab's output.
    const { body, size } = await ctx.deps.objects.getStream(blobKey(a.sha256));
    return {
      body: {},
      raw: {
        contentType: a.content_type, body,
        headers: {
          ETag: `"${a.sha256}"`, Digest: `sha-256=${Buffer.from(a.sha256, 'hex').toString('base64')}`,
          'Content-Disposition': contentDisposition(a.file_name), 'Content-Length': String(size),
        },
      },
    };
  },
};

/** POST /runs without its retry: the plan rechecked (or the request prepared) and the run accepted as `runId`. */
async function createRun(input: Record<string, any>, ctx: ToolContext, runId: string): Promise<RunRow> {
  let proposal: RunProposal;
  let planId: string | undefined;
  let profile: ComputeProfileRow;
  if (input.plan_id) {
    const plan = await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'run', input.plan_id, input.plan_sha256);
    proposal = plan.proposal as RunProposal;
    planId = plan.id;
    profile = await recheckProposal(ctx.deps, ctx.caller, proposal);
  } else {
    const prepared = await prepareRun(ctx.deps, ctx.caller, {
      ref: input.ref, refParam: 'ref', inputs: input.inputs ?? {}, profileId: input.compute_profile, profileParam: 'compute_profile',
      maxRuntimeSeconds: input.max_runtime_seconds, seed: input.seed, reuse: input.reuse, caps: true,
      environmentAsOf: pastDay(input.environment_as_of, 'environment_as_of'),
    });
    const blocking = prepared.findings.filter((f) => f.severity === 'blocking');
    if (blocking.length) throw errors.validation(blocking[0]!.code, blocking.map((f) => f.message).join(' '), blocking[0]!.path, { findings: blocking });
    proposal = prepared.proposal;
    profile = prepared.profile;
  }
  return acceptRun(ctx.deps, ctx.caller, proposal, { runId, profile, planId, metadata: input.metadata });
}

/**
 * Server-sent events: every event after `after`, then new ones as they are appended,
 * each with `id: <seq>` so a client resumes with Last-Event-ID; closes after the run's
 * terminal state event. The stream subscribes to the run's append notices before its
 * first read and reads again on each one, so events reach the client as they commit;
 * while nothing happens it sends a keep-alive comment and re-reads every 15 s.
 */
const SSE_PAGE = 200;
const SSE_IDLE_MS = 15_000;
function eventStream(ctx: ToolContext, runId: string, after: number): NodeJS.ReadableStream {
  const out = new PassThrough();
  const sub = ctx.deps.runEvents.subscribe(runId);
  let closed = false;
  out.on('close', () => {
    closed = true;
    sub.close();
  });
  void (async () => {
    let last = after;
    const deadline = Date.now() + 2 * 3600_000;
    // Sent with the first read, so the headers leave at once: a client (or proxy) that
    // hears nothing for a while would otherwise take the stream for a buffered one.
    let opening = ': stream open\n\n';
    while (!closed && Date.now() < deadline) {
      const events = await listEvents(ctx.deps.db, runId, last, SSE_PAGE);
      let ended = false;
      // The events of one read leave as one chunk: one socket write, not one per event.
      let chunk = opening;
      opening = '';
      for (const e of events) {
        chunk += `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(eventView(e))}\n\n`;
        last = e.seq;
        if (e.type === 'state_changed' && TERMINAL.includes(e.data.status as never)) ended = true;
      }
      if (ended) {
        out.end(chunk);
        return;
      }
      if (chunk) out.write(chunk);
      if (events.length === SSE_PAGE) continue;
      if (!(await sub.next(SSE_IDLE_MS)) && !closed) out.write(': keep-alive\n\n');
    }
    out.end();
  })().catch(() => out.end()).finally(() => sub.close());
  return out;
}

for (const t of runTools) {
  const h = HANDLERS[t.name];
  if (h) t.handler = h;
}
