import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { Silico, SDK_VERSION } from '../client.ts';
import { resolveSettings, configFile, readSettings, writeSettings, type Settings } from './config.ts';
import { EXIT, UsageError, makeOut, reportFailure, type Out } from './output.ts';
import { runCommand } from './commands/run.ts';
import { experimentGet, experimentRun, experimentRuns } from './commands/experiment.ts';
import { passportGet, passportVerify } from './commands/passports.ts';
import { invokeCommand } from './commands/invoke.ts';
import { hostChange, hostPlan, hostRequest, hostStatus } from './commands/host.ts';
import { bioFetch, bioSearch } from './commands/bio.ts';
import { petabImport, petabPlan, petabShow } from './commands/petab.ts';
import { sessionComplete, sessionNew, sessionProgress, sessionShow, sessionValidate } from './commands/session.ts';
import { buy, purchaseGet } from './commands/buy.ts';
import { webhooksAdd, webhooksDeliveries, webhooksList, webhooksListen, webhooksRemove, webhooksReplay, webhooksRotate } from './commands/webhooks.ts';
import * as r from './commands/resources.ts';
import { serveMcpOverStdio } from './mcpBridge.ts';

const collect = (v: string, acc: string[]) => [...acc, v];
const count = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number');
  return n;
};
const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};
const anyInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
};

interface Globals { baseUrl?: string; apiKey?: string; json?: boolean }

/** The settings in force, and a client for them (a missing key is a usage error). */
function connect(cmd: Command): { client: Silico; out: Out; settings: Settings } {
  const g = cmd.optsWithGlobals<Globals>();
  const settings = resolveSettings({ baseUrl: g.baseUrl, apiKey: g.apiKey });
  if (!settings.apiKey) throw new UsageError(`no API key: run \`silico configure --api-key sk_...\`, set SILICO_API_KEY, or pass --api-key`);
  return { client: new Silico({ apiKey: settings.apiKey, baseUrl: settings.baseUrl }), out: makeOut(Boolean(g.json)), settings };
}

let exitCode: number = EXIT.ok;

/** Wraps a command body: its exit code, or the failure's. */
function action<A extends unknown[]>(body: (cmd: Command, ...args: A) => Promise<number>) {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    try {
      // commander passes the positional arguments, then the options, then the command.
      exitCode = await body(cmd, ...(args.slice(0, -2) as A));
    } catch (err) {
      exitCode = reportFailure(err, makeOut(Boolean(cmd.optsWithGlobals<Globals>().json)));
    }
  };
}

export function buildProgram(): Command {
  const program = new Command('silico')
    .description('Silico from the terminal: run labs, follow runs, move files, and serve MCP on stdio.')
    .version(SDK_VERSION)
    .option('--base-url <url>', 'API base URL ending in /v1 (default: SILICO_BASE_URL, then the saved configuration)')
    .option('--api-key <key>', 'API key (default: SILICO_API_KEY, then the saved configuration)')
    .option('--json', 'print machine-readable JSON (errors as the API\'s error envelope)')
    .showHelpAfterError()
    .exitOverride();

  program.command('configure')
    .description(`save --base-url and --api-key (in ${configFile()}, readable only by you); without them, show what is saved`)
    .action(action(async (cmd) => {
      const g = cmd.optsWithGlobals<Globals>();
      const o: Settings = { baseUrl: g.baseUrl, apiKey: g.apiKey };
      const next = { ...readSettings(), ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}), ...(o.apiKey ? { apiKey: o.apiKey } : {}) };
      if (o.baseUrl || o.apiKey) writeSettings(next);
      const shown = { base_url: next.baseUrl ?? null, api_key: next.apiKey ? `${next.apiKey.slice(0, 10)}…` : null, file: configFile() };
      makeOut(Boolean(g.json)).result(shown, () => `base_url ${shown.base_url ?? '(unset)'}\napi_key  ${shown.api_key ?? '(unset)'}\nfile     ${shown.file}`);
      return EXIT.ok;
    }));

  program.command('capabilities')
    .description('list runnable lab versions with their contracts')
    .option('--limit <n>', 'how many', positiveInt, 50)
    .action(action(async (cmd) => {
      const { client, out } = connect(cmd);
      return r.capabilities(client, cmd.opts(), out);
    }));

  const hub = program.command('hub').description('the Hub of published labs and models');
  hub.command('search [query]')
    .description('full-text search of accessible releases')
    .option('--tag <tag>', 'filter by tag (repeatable)', collect, [])
    .addOption(new Option('--package-type <type>', 'lab or model').choices(['lab', 'model']))
    .option('--limit <n>', 'how many', positiveInt, 20)
    .action(action(async (cmd, query?: string) => {
      const { client, out } = connect(cmd);
      return r.hubSearch(client, query, cmd.opts(), out);
    }));

  program.command('run <ref>')
    .description('prepare a run, show its findings and price, confirm, execute, follow it and print its results')
    .option('-i, --input <name=value>', 'an input (repeatable); values are JSON where they parse (0.3, true, [1,2]), else text', collect, [])
    .option('--inputs-file <file.json>', 'inputs from a JSON object (flags win)')
    .option('--profile <id>', 'compute profile id (see the account\'s compute profiles)')
    .option('--max-runtime <seconds>', 'stop and charge at most this long', positiveInt)
    .option('--seed <n>', 'random seed', anyInt)
    .option('--reuse', 'answer from an identical completed run of yours at no cost, if there is one')
    .option('-y, --yes', 'run without asking (required when stdin is not a terminal)')
    .option('--download <dir>', 'download the artifacts here, each verified against its sha256')
    .option('--direct', 'with --download: take the bytes straight from the object store (presigned URLs) where the service offers it')
    .option('--no-progress', 'no progress bar')
    .action(action(async (cmd, ref: string) => {
      const { client, out } = connect(cmd);
      return runCommand(client, ref, cmd.opts(), out);
    }));

  const runs = program.command('runs').description('your runs');
  runs.command('list')
    .description('newest first')
    .option('--status <status>', 'queued, running, cancelling, completed, failed, cancelled or timed_out')
    .option('--metadata <key=value>', 'filter by metadata (repeatable)', collect, [])
    .option('--limit <n>', 'how many', positiveInt, 20)
    .action(action(async (cmd) => {
      const { client, out } = connect(cmd);
      return r.runsList(client, cmd.opts(), out);
    }));
  runs.command('get <run_id>').description('status, progress and charges of one run').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return r.runsGet(client, id, out);
  }));
  runs.command('cancel <run_id>').description('cancel a run; only elapsed compute is charged').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return r.runsCancel(client, id, out);
  }));
  runs.command('events <run_id>')
    .description('a run\'s log; --follow reads until the run ends')
    .option('-f, --follow', 'keep reading until the terminal event')
    .option('--after <seq>', 'only events after this sequence number', anyInt)
    .action(action(async (cmd, id: string) => {
      const { client, out } = connect(cmd);
      return r.runsEvents(client, id, cmd.opts(), out);
    }));

  const experiment = program.command('experiment').description('studies: arms of a lab run and compared together');
  experiment.command('run <study.yaml>')
    .description('prepare a study (arms, or a sweep expanded into arms), show its price, confirm, open it; exit 1 with --wait when a run did not complete')
    .option('-y, --yes', 'open without asking (required when stdin is not a terminal)')
    .option('--wait', 'follow the run totals to the end, then print the comparison')
    .option('--poll-ms <ms>', 'between reads of the study while waiting', positiveInt, 1000)
    .option('--no-progress', 'no progress bar')
    .action(action(async (cmd, file: string) => {
      const { client, out } = connect(cmd);
      return experimentRun(client, file, cmd.opts(), out);
    }));
  experiment.command('get <experiment_id>').description('status, run totals and the comparison of a study').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return experimentGet(client, id, out);
  }));
  experiment.command('runs <experiment_id>')
    .description('a study\'s runs with the parameter set each was given and what it told (outputs, or loss)')
    .option('--sort <key>', 'position (default), params.<name>, outputs.<key> or loss')
    .option('--order <order>', 'asc (default) or desc')
    .option('--status <status>', 'queued, running, cancelling, completed, failed, cancelled or timed_out')
    .option('--limit <n>', 'how many (at most 100 a page)', positiveInt, 20)
    .option('--all', 'every run, page after page')
    .action(action(async (cmd, id: string) => {
      const { client, out } = connect(cmd);
      return experimentRuns(client, id, cmd.opts(), out);
    }));

  program.command('invoke <reference>')
    .description('invoke a hosted release (<ns>/<name>@<version>) on its warm deployment: plan, execute, wait; exit 1 when it does not complete')
    .option('--sha256 <hex>', 'the package digest to bind (default: the release\'s own, from the Hub)')
    .option('-i, --input <name=value>', 'an input (JSON value or text); repeatable', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--seed <n>', 'the seed of its random streams', positiveInt)
    .option('--timeout-ms <ms>', 'stop waiting after this long (the invocation goes on)', positiveInt)
    .action(action(async (cmd, reference: string) => {
      const { client, out } = connect(cmd);
      return invokeCommand(client, reference, cmd.opts(), out);
    }));
  const host = program.command('host').description('a lab\'s standing deployment: plan, request, status, pause, resume, retire');
  const planOptions = (c: ReturnType<typeof host.command>) => c
    .requiredOption('--release <reference>', 'the exact release to host: <namespace>/<name>@<version>')
    .option('--sha256 <hex>', 'its package digest (default: the release\'s own, from the Hub)')
    .option('--profile <id>', 'compute profile of the warm instances (default cpu-small)')
    .option('--min <n>', 'warm instances kept ready (billed by the hour while ready)', count)
    .option('--max <n>', 'most instances under load', positiveInt)
    .option('--visibility <v>', 'private, team or public (public waits for an operator)');
  planOptions(host.command('plan <lab_id>').description('prepare a hosting plan: release, bounds, hourly cost, approval; nothing starts'))
    .action(action(async (cmd, labId: string) => {
      const { client, out } = connect(cmd);
      return hostPlan(client, labId, cmd.opts(), out);
    }));
  planOptions(host.command('request <lab_id>').description('prepare and execute the hosting plan; with --wait, until ready or awaiting review'))
    .option('--wait', 'wait for the deployment checks (and exit 1 if they fail)')
    .option('--timeout-ms <ms>', 'stop waiting after this long (the lifecycle goes on)', positiveInt)
    .action(action(async (cmd, labId: string) => {
      const { client, out } = connect(cmd);
      return hostRequest(client, labId, cmd.opts(), out);
    }));
  host.command('status <lab_id>').description('status, revision, release, approval and each deployment check').action(action(async (cmd, labId: string) => {
    const { client, out } = connect(cmd);
    return hostStatus(client, labId, out);
  }));
  for (const change of ['pause', 'resume', 'retire'] as const) {
    host.command(`${change} <lab_id>`).description(`${change} the deployment (at --revision, or the current one)`)
      .option('--revision <n>', 'the revision you read (a stale one is refused: revision_conflict)', count)
      .option('--wait', `wait until it is ${change === 'pause' ? 'paused' : change === 'resume' ? 'ready' : 'retired'}`)
      .option('--timeout-ms <ms>', 'stop waiting after this long', positiveInt)
      .action(action(async (cmd, labId: string) => {
        const { client, out } = connect(cmd);
        return hostChange(client, labId, change, cmd.opts(), out);
      }));
  }
  const bio = program.command('bio').description('approved biology sources: search, and fetch exact records as resources');
  bio.command('search <query>').description('search uniprot, pdb and ncbi_nucleotide (or --source ...); a failing source is a warning')
    .option('-s, --source <id>', 'a source to search; repeatable', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--limit <n>', 'hits per source (1-50)', positiveInt)
    .action(action(async (cmd, query: string) => {
      const { client, out } = connect(cmd);
      return bioSearch(client, query, cmd.opts(), out);
    }));
  bio.command('fetch <source> <record_ids...>').description('store exact records as resources (res_...), by sha256; pins nothing')
    .option('--format <f>', 'fasta or json (uniprot), mmcif or pdb (pdb), fasta or genbank (ncbi_nucleotide)')
    .option('--sha256 <hex>', 'the expected digest of the (one) record: a mismatch stores nothing')
    .action(action(async (cmd, source: string, records: string[]) => {
      const { client, out } = connect(cmd);
      return bioFetch(client, source, records, cmd.opts(), out);
    }));
  const petab = program.command('petab').description('PEtab problems: check one (the petab library\'s lint, its NLL at nominal), import it as a lab, a dataset and a calibration design');
  const problemOptions = (c: ReturnType<typeof petab.command>) => c
    .option('--title <title>', 'the lab\'s title (default: the folder\'s or archive\'s name)')
    .option('--yaml <path>', 'the problem\'s YAML among its files (default: the only PEtab YAML)')
    .option('--license <licence>', 'the measurements\' licence, for their dataset')
    .option('--source <text>', 'where the measurements come from, for their dataset');
  problemOptions(petab.command('plan <problem>').description('upload a problem (a folder or one .zip) and plan its import: findings, NLL at nominal, design; creates nothing'))
    .action(action(async (cmd, problem: string) => {
      const { client, out } = connect(cmd);
      return petabPlan(client, problem, cmd.opts(), out);
    }));
  problemOptions(petab.command('import <problem>').description('plan and, when the plan is ready, import it: running this is the approval'))
    .action(action(async (cmd, problem: string) => {
      const { client, out } = connect(cmd);
      return petabImport(client, problem, cmd.opts(), out);
    }));
  petab.command('show <import_id>').description('an import: its files\' digests, design, NLL at nominal, lab and dataset').action(action(async (cmd, importId: string) => {
    const { client, out } = connect(cmd);
    return petabShow(client, importId, out);
  }));
  const session = program.command('session').description('durable collaboration sessions: contract, plan, progress, validation, completion');
  session.command('new <title>').description('create a session (its workflow keeps it for weeks)').option('--goal <text>', 'what the work is for')
    .action(action(async (cmd, title: string) => {
      const { client, out } = connect(cmd);
      return sessionNew(client, title, cmd.opts(), out);
    }));
  session.command('show <session_id>').description('resume: steps and their states, latest progress, validation, next actions').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return sessionShow(client, id, out);
  }));
  session.command('progress <session_id> <step_id> <status>').description('record progress on a step: started, done, blocked or skipped')
    .option('--note <text>', 'what happened')
    .option('-e, --evidence <ref>', 'evidence: <kind>:<id> (run, passport, file, dataset, experiment, resource) or note:<text>; repeatable', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action(action(async (cmd, id: string, step: string, status: string) => {
      const { client, out } = connect(cmd);
      return sessionProgress(client, id, step, status, cmd.opts(), out);
    }));
  session.command('validate <session_id>').description('evaluate each requirement against its evidence (satisfied, unsatisfied, unknown)')
    .option('-e, --evidence <binding>', 'bind evidence to a requirement: <requirement_id>=<kind>:<id>; repeatable', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action(action(async (cmd, id: string) => {
      const { client, out } = connect(cmd);
      return sessionValidate(client, id, cmd.opts(), out);
    }));
  session.command('complete <session_id>').description('complete the session when every requirement is satisfied and every step done; exit 1 with what is missing')
    .action(action(async (cmd, id: string) => {
      const { client, out } = connect(cmd);
      return sessionComplete(client, id, out);
    }));
  const webhooks = program.command('webhooks').description('signed event deliveries: endpoints, dead letters, and a local forwarder for development');
  const repeat = (v: string, acc: string[]) => [...acc, v];
  webhooks.command('listen').description('forward new events to a local URL, signed as deliveries are (polls; nothing reaches your machine from outside)')
    .requiredOption('--forward-to <url>', 'where to POST each event, e.g. http://localhost:3000/webhooks')
    .option('-e, --events <type>', 'only these event types; repeatable', repeat, [] as string[])
    .option('--secret <whsec>', 'sign with this secret (default: a new one, printed)')
    .option('--max-events <n>', 'stop after forwarding this many', positiveInt)
    .action(action(async (cmd) => {
      const { client, out } = connect(cmd);
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      return webhooksListen(client, cmd.opts(), out, stop.signal);
    }));
  webhooks.command('add <url>').description('register an endpoint; its signing secret is printed once')
    .option('-e, --events <type>', 'an event type (run.completed, run.failed, run.cancelled, run.timed_out, experiment.completed, hosting.status_changed, invocation.completed); repeatable', repeat, [] as string[])
    .action(action(async (cmd, url: string) => {
      const { client, out } = connect(cmd);
      return webhooksAdd(client, url, cmd.opts(), out);
    }));
  webhooks.command('list').description('the account\'s endpoints').action(action(async (cmd) => {
    const { client, out } = connect(cmd);
    return webhooksList(client, out);
  }));
  webhooks.command('remove <endpoint_id>').description('stop deliveries to an endpoint').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return webhooksRemove(client, id, out);
  }));
  webhooks.command('rotate-secret <endpoint_id>').description('a new signing secret; the previous one also signs during the overlap')
    .option('--overlap-seconds <n>', 'how long the previous secret still signs (default 86400)', positiveInt)
    .action(action(async (cmd, id: string) => {
      const { client, out } = connect(cmd);
      return webhooksRotate(client, id, cmd.opts(), out);
    }));
  webhooks.command('deliveries').description('deliveries, newest first; --status dead for the dead letters')
    .option('--status <s>', 'pending, delivered or dead')
    .action(action(async (cmd) => {
      const { client, out } = connect(cmd);
      return webhooksDeliveries(client, cmd.opts(), out);
    }));
  webhooks.command('replay <delivery_id>').description('deliver a dead (or delivered) event again').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return webhooksReplay(client, id, out);
  }));
  const passport = program.command('passport').description('signed per-check evidence of a run or a workspace revision (never a score)');
  passport.command('get')
    .description('build a passport of a run or a revision now, or fetch a stored one by id')
    .option('--run <run_id>', 'a run of yours')
    .option('--workspace <workspace_id>', 'a workspace of yours (with --revision)')
    .option('--revision <revision_id>', 'a revision of that workspace')
    .option('--id <passport_id>', 'a stored passport (pp_...), exactly as signed')
    .option('--out <file>', 'write the passport as JSON')
    .option('--openssl-dir <dir>', 'write passport.json, passport.canonical.json, passport.sig and key.pem for `openssl pkeyutl -verify`')
    .action(action(async (cmd) => {
      const { client, out } = connect(cmd);
      return passportGet(client, cmd.opts(), out);
    }));
  passport.command('verify <file>')
    .description('check a passport\'s Ed25519 signature offline; exit 0 verified, 1 not')
    .option('--keys <file>', 'public keys (the body of GET /passports/keys) instead of fetching them')
    .action(action(async (cmd, file: string) => {
      const keys = cmd.opts<{ keys?: string }>().keys;
      return passportVerify(file, { file: keys, client: () => connect(cmd).client }, makeOut(Boolean(cmd.optsWithGlobals<Globals>().json)));
    }));

  const files = program.command('files').description('your input files');
  files.command('upload <path>')
    .description('upload a file (streamed)')
    .option('--name <name>', 'the name to record (default: the file\'s own)')
    .action(action(async (cmd, file: string) => {
      const { client, out } = connect(cmd);
      return r.filesUpload(client, file, cmd.opts(), out);
    }));
  files.command('download <file_id> [dest]')
    .description('download a file, verified against its sha256 (default dest: its name)')
    .action(action(async (cmd, id: string, dest?: string) => {
      const { client, out } = connect(cmd);
      return r.filesDownload(client, id, dest, out);
    }));

  program.command('buy <usd>').description('buy compute: prints where to pay, waits for the payment provider to confirm, then prints the credit (a key with the compute:buy scope)')
    .option('--no-wait', 'print where to pay and return at once')
    .option('--poll-ms <ms>', 'how often to ask whether it was paid', positiveInt)
    .action(action(async (cmd, amount: string) => {
      const { client, out } = connect(cmd);
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      return buy(client, amount, cmd.opts(), out, stop.signal);
    }));
  const purchases = program.command('purchases').description('what was bought');
  purchases.command('get <purchase_id>').description('one purchase: its status, credit and refunds').action(action(async (cmd, id: string) => {
    const { client, out } = connect(cmd);
    return purchaseGet(client, id, out);
  }));

  program.command('account').description('the connected account, this key\'s access, usage and compute').action(action(async (cmd) => {
    const { client, out } = connect(cmd);
    return r.account(client, out);
  }));

  program.command('mcp')
    .description('serve the service\'s MCP tools on stdio (for agents), with the key from SILICO_API_KEY or the configuration')
    .action(action(async (cmd) => {
      const g = cmd.optsWithGlobals<Globals>();
      const settings = resolveSettings({ baseUrl: g.baseUrl, apiKey: g.apiKey });
      if (!settings.apiKey) throw new UsageError('silico mcp needs an API key: set SILICO_API_KEY');
      await serveMcpOverStdio({ baseUrl: settings.baseUrl, apiKey: settings.apiKey, version: SDK_VERSION });
      return -1; // keeps serving until stdin closes
    }));
  return program;
}

/** Runs the CLI: exit 0 completed, 1 run failed or cancelled, 2 usage, 3 API error. */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    throw err;
  }
  if (exitCode >= 0) process.exitCode = exitCode;
}

await main(process.argv);
