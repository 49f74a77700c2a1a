// console.mjs — drives the operator console in a real Chromium for server/console_test.go.
// It signs in with an API key, waits until the page shows the task and the approval the
// test started, approves the approval and cancels the task with the page's buttons, and
// saves screenshots. What the page showed goes to stdout as one JSON line; any failure,
// any Content-Security-Policy violation and any script error ends it with exit code 1.
//
// Environment: CONSOLE_URL (the admin listener's base URL), CONSOLE_KEY (an operator API
// key), CONSOLE_TASK and CONSOLE_APPROVAL (the ids to act on), CONSOLE_SHOTS (where the
// screenshots go), CONSOLE_CHROMIUM (the browser binary, default /usr/bin/chromium).
import {chromium} from 'playwright-core';

const env = (k, d) => {
  const v = process.env[k] ?? d;
  if (v === undefined) {
    throw new Error(`${k} is not set`);
  }
  return v;
};
const base = env('CONSOLE_URL');
const key = env('CONSOLE_KEY');
const taskID = env('CONSOLE_TASK');
const approvalID = env('CONSOLE_APPROVAL');
const shots = env('CONSOLE_SHOTS');
const executablePath = env('CONSOLE_CHROMIUM', '/usr/bin/chromium');
const timeout = 20000;

const args = ['--disable-gpu', '--disable-dev-shm-usage'];
if (process.getuid && process.getuid() === 0) {
  args.push('--no-sandbox'); // Chromium refuses its sandbox as root
}
const browser = await chromium.launch({executablePath, headless: true, args});
const problems = [];
const shown = {};
try {
  const context = await browser.newContext({viewport: {width: 1360, height: 900}, deviceScaleFactor: 1});
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on('console', (m) => {
    if (m.type() === 'error') {
      problems.push('console error: ' + m.text());
    }
  });
  page.on('pageerror', (e) => problems.push('script error: ' + e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith(base)) {
      problems.push('request to another origin: ' + r.url());
    }
    if (r.url().includes(key)) {
      problems.push('the credential in a URL: ' + r.url());
    }
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI);
    });
  });

  const resp = await page.goto(base + '/console');
  shown.csp = resp.headers()['content-security-policy'];
  await page.waitForSelector('#login');
  await page.screenshot({path: `${shots}/console-login.png`});

  await page.selectOption('#cred-kind', 'apikey');
  await page.fill('#cred', key);
  await page.click('#login button[type=submit]');

  // the page fills from admin.status, the event stream and admin.approvals.list
  await page.waitForSelector('#live.ok');
  await page.waitForSelector(`#tasks tr[data-task="${taskID}"][data-status="running"]`);
  await page.waitForSelector(`#approvals tr[data-approval="${approvalID}"]`);
  await page.waitForSelector('#backends tr[data-backend="demo"] svg.chart polyline');
  await page.waitForSelector('#errors tr[data-code]');
  await page.waitForSelector('#catalog tr[data-cap="hold"]');
  shown.listeners = await page.$$eval('#listeners tr', (rows) => rows.map((r) => r.innerText.replace(/\s+/g, ' ').trim()));
  shown.faces = await page.$$eval('#faces tr', (rows) => rows.map((r) => r.innerText.replace(/\s+/g, ' ').trim()));
  shown.task = await page.$eval(`#tasks tr[data-task="${taskID}"]`, (r) => r.innerText.replace(/\s+/g, ' ').trim());
  shown.approval = await page.$eval(`#approvals tr[data-approval="${approvalID}"]`, (r) => r.innerText.replace(/\s+/g, ' ').trim());
  shown.backends = await page.$$eval('#backends tr', (rows) => rows.map((r) => r.getAttribute('data-backend')));
  shown.errorLinks = await page.$$eval('#errors a', (as) => as.map((a) => a.getAttribute('href')));
  shown.storage = await page.evaluate(() => ({
    session: Object.keys(sessionStorage), local: Object.keys(localStorage), cookie: document.cookie,
  }));
  await page.screenshot({path: `${shots}/console-overview.png`, fullPage: true});

  await page.click(`button[data-action="approve"][data-approval="${approvalID}"]`);
  await page.waitForSelector(`#audit tr[data-audit="${approvalID}"][data-status="approved"]`);
  await page.waitForSelector(`#approvals tr[data-approval="${approvalID}"]`, {state: 'detached'});
  shown.audit = await page.$eval(`#audit tr[data-audit="${approvalID}"]`, (r) => r.innerText.replace(/\s+/g, ' ').trim());

  await page.click(`button[data-action="cancel"][data-task="${taskID}"]`);
  await page.waitForSelector(`#tasks tr[data-task="${taskID}"][data-status="cancelled"]`);
  shown.cancelled = await page.$eval(`#tasks tr[data-task="${taskID}"]`, (r) => r.innerText.replace(/\s+/g, ' ').trim());
  await page.screenshot({path: `${shots}/console-after-actions.png`, fullPage: true});

  // signing out forgets the credential
  await page.click('#logout');
  await page.waitForSelector('#login');
  shown.afterSignOut = await page.evaluate(() => Object.keys(sessionStorage));
} catch (e) {
  problems.push(String(e && e.stack || e));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify({shown, problems}) + '\n');
process.exit(problems.length ? 1 : 0);
