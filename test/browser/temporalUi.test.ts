/**
 * The Temporal UI of the local stack in a real browser (Debian's chromium), as an operator
 * reads it (issue 47): the workflow list says what each workflow is, and a running study's
 * page says how far it got. With SILICO_SCREENSHOTS set it saves the screenshots the
 * operations guide shows (docs/operations.md).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser } from 'playwright-core';
import { Client, Connection } from '@temporalio/client';
import { call, closeTestDb, newAccount, until, waitForRun } from '../helpers.ts';
import { experimentWorkflowId, runWorkflowId } from '../../kernel/workflowNames.ts';
import { operatorView } from '../operatorView.ts';
import { browserExecutable } from './browser.ts';
import { listUrl, screenshot, shownText, temporalUiPage, workflowUrl } from './temporalUi.ts';
import { startSlowStudy } from '../slowStudy.ts';

const UI = process.env.TEMPORAL_UI_URL!;
let browser: Browser;
let connection: Connection;

before(async () => {
  assert.ok(UI, 'the shared stack runs the Temporal UI (TEMPORAL_UI_URL)');
  browser = await chromium.launch({ executablePath: await browserExecutable(), args: ['--no-sandbox'] });
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
}, { timeout: 600_000 });

after(async () => {
  await browser?.close();
  await connection?.close();
  await closeTestDb();
});

test('the workflow list says what each of an account\'s workflows is; a running study\'s page shows its batch and how many runs ended', { timeout: 240_000 }, async () => {
  const owner = await newAccount({ usd: 20 });
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth', inputs: {} } });
  assert.equal(started.status, 200, started.text);
  const run = await waitForRun(owner.key, started.body.id);
  // A study slow enough to be seen running: each run busy for 4-6 s.
  const studyId = await startSlowStudy(owner.key, { title: 'Slow study for operators', busy: [4, 6], maxRuntimeSeconds: 60 });
  const studyWorkflow = experimentWorkflowId(studyId);
  await until(60_000, async () => ((await operatorView(studyWorkflow)).current?.startsWith('**Batch 1**') ? true : undefined));

  // The list, filtered to the account as the runbook's searches are: each row's summary is there.
  const expected = [
    { id: runWorkflowId(run.id), summary: (await operatorView(runWorkflowId(run.id))).summary! },
    { id: studyWorkflow, summary: (await operatorView(studyWorkflow)).summary! },
  ];
  const page = await temporalUiPage(browser);
  await page.goto(listUrl(UI, `SilicoAccount = "${owner.account.id}"`));
  for (const w of expected) {
    const row = page.getByRole('row').filter({ hasText: w.id });
    await row.waitFor({ timeout: 20_000 });
    assert.ok((await row.innerText()).includes(w.summary), `the row of ${w.id} shows "${w.summary}": ${await row.innerText()}`);
  }
  assert.equal(await page.getByRole('row').filter({ hasText: owner.account.id }).count(), expected.length, 'every workflow of the account, each with its summary');
  await screenshot(page, 'temporal-ui-list');

  // The study's own page while it runs: its summary, details and where it stands.
  const described = await new Client({ connection }).workflow.getHandle(studyWorkflow).describe();
  await page.goto(workflowUrl(UI, studyWorkflow, described.runId));
  const text = await until(20_000, async () => {
    const t = await shownText(page);
    return t.includes('Batch 1') && t.includes(expected[1]!.summary) ? t : undefined;
  });
  assert.match(text, /Batch 1\s*\(\d+ runs\): (running|telling the results)/, 'its current details: the batch and what it does');
  assert.ok(text.includes(`Experiment ${studyId} of account ${owner.account.id}.`), 'its details');
  await screenshot(page, 'temporal-ui-study');

  const done = await until(120_000, async () => {
    const e = (await call('GET', `/experiments/${studyId}`, { key: owner.key })).body;
    return e.completed_at ? e : undefined;
  });
  assert.equal(done.status, 'completed');
  assert.equal((await operatorView(studyWorkflow)).current, 'Completed: the analysis is stored.');
});
