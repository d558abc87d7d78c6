/**
 * /docs in a real browser (Debian's chromium driven by playwright-core) against the test
 * stack: Scalar's API reference, served from the pinned package, draws every route of
 * the contract with its request and response schemas, and its "try it" client calls
 * GET /v1/account with a key typed into the page; nothing is fetched from another
 * origin, nothing breaks the page's Content-Security-Policy, and axe-core finds no
 * serious or critical violation.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { BASE_URL, closeTestDb, newAccount } from '../helpers.ts';
import { CONTRACT_ROUTES } from '../contract.ts';
import { SCALAR_SCRIPT } from '../../api/docs.ts';
import { browserExecutable } from './browser.ts';

const ORIGIN = new URL(BASE_URL).origin;
let browser: Browser;
let owner: Awaited<ReturnType<typeof newAccount>>;
before(async () => {
  browser = await chromium.launch({ executablePath: await browserExecutable(), args: ['--no-sandbox'] });
  owner = await newAccount({ usd: 5 });
});
after(async () => {
  await browser?.close();
  await closeTestDb();
});

/** Scalar's anchor of an operation: its tag's slug, then the method and the path under the server URL. */
const anchor = (r: { method: string; path: string; group: string }) => `api-1/tag/${r.group.replace(/ /g, '-')}/${r.method}${r.path}`;

/** The reference loaded, with what it fetched from elsewhere and every CSP report or page error. */
async function openDocs(): Promise<{ page: Page; external: string[]; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const external: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(ORIGIN) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) external.push(r.url());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  await page.goto(`${ORIGIN}/docs`);
  await page.locator(`[id="${anchor({ method: 'GET', path: '/account', group: 'account' })}"]`).waitFor({ state: 'attached', timeout: 60_000 });
  return { page, external, problems };
}

test('/docs is Scalar\'s reference from the pinned bundle: every route of the contract, each with its responses, a request body\'s schema where it takes one', async () => {
  const { page, external, problems } = await openDocs();
  const scripts = await page.$$eval('script[src]', (s) => s.map((e) => (e as HTMLScriptElement).getAttribute('src')));
  assert.ok(scripts.includes(SCALAR_SCRIPT), `the page loads ${SCALAR_SCRIPT}: ${scripts.join(', ')}`);
  for (const r of CONTRACT_ROUTES) {
    assert.equal(await page.locator(`[id="${anchor(r)}"]`).count() > 0, true, `${r.method} /v1${r.path} is on the page`);
  }
  // One operation in full: POST /runs shows its body's fields, its responses and their schemas.
  const create = page.locator(`[id="${anchor({ method: 'POST', path: '/runs', group: 'runs' })}"]`);
  await create.scrollIntoViewIfNeeded();
  await create.getByText('Request Body').first().waitFor();
  for (const field of ['ref', 'inputs', 'plan_sha256']) await create.getByText(field, { exact: true }).first().waitFor();
  for (const status of ['200', '402', '409', '422']) await create.getByText(status, { exact: true }).first().waitFor({ state: 'attached' });
  assert.deepEqual(external, [], 'nothing is fetched from another origin');
  assert.deepEqual(problems, [], 'no CSP refusal or page error');
  const axe = await new AxeBuilder({ page }).analyze();
  const bad = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join('; ')})`), [], 'axe-core: no serious or critical violation');
});

test('"try it": GET /v1/account from the reference with a key typed into it answers 200 with the key\'s account', async () => {
  const { page, external, problems } = await openDocs();
  const op = page.locator(`[id="${anchor({ method: 'GET', path: '/account', group: 'account' })}"]`);
  await op.scrollIntoViewIfNeeded();
  await op.getByRole('button', { name: /Test Request/ }).first().click();
  const client = page.getByRole('dialog');
  await client.waitFor();
  await client.getByPlaceholder('Token').first().fill(owner.key);
  const answered = page.waitForResponse((r) => r.url() === `${BASE_URL}/account` && r.request().method() === 'GET');
  await client.getByRole('button', { name: /^Send/ }).first().click();
  const res = await answered;
  assert.equal(res.status(), 200);
  assert.equal((await res.json()).account.namespace, owner.account.namespace);
  assert.equal(await res.request().headerValue('authorization'), `Bearer ${owner.key}`);
  // The client shows the answer: its status and the account's namespace.
  await client.getByText('200', { exact: false }).first().waitFor();
  await client.getByText(owner.account.namespace).first().waitFor();
  assert.deepEqual(external, []);
  assert.deepEqual(problems, []);
});
