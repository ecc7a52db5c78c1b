// Drives sluice's web console in headless Chromium (Debian's chromium,
// through playwright-core) against two real `sluice serve --console`
// started by run.sh: OPEN_URL (no authentication) and SIGNED_URL (access
// keys checked; CONSOLE_KEY_ID / CONSOLE_SECRET). It sends, peeks, lets a
// peek move messages to the dead-letter queue, redrives them, watches the
// rates, purges, tries cross-site requests, and checks what the page
// shows, the effect through the SQS API, and each screenshot it takes.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const OPEN = process.env.OPEN_URL;
const SIGNED = process.env.SIGNED_URL;
const SHOTS = process.env.SCREENSHOTS;
const KEY_ID = process.env.CONSOLE_KEY_ID;
const SECRET = process.env.CONSOLE_SECRET;
const VIEW = { width: 1280, height: 900 };
const CONSOLE = '/_sluice/console/';
assert.ok(OPEN && SIGNED && SHOTS && KEY_ID && SECRET, 'run through infra/console/run.sh');

let passed = 0;
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
  } catch (e) {
    console.log(`not ok - ${name}`);
    throw e;
  }
  passed++;
  console.log(`ok - ${name} (${Date.now() - t0} ms)`);
}

// ---- the SQS API of the open server (AWS JSON 1.0; nothing to sign) ----------
async function sqs(action, body) {
  const r = await fetch(OPEN + '/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.0', 'X-Amz-Target': 'AmazonSQS.' + action },
    body: JSON.stringify(body),
  });
  const out = await r.json();
  assert.equal(r.status, 200, `${action}: ${JSON.stringify(out)}`);
  return out;
}
const queueUrl = (name) => `${OPEN}/000000000000/${name}`;
async function depth(name) {
  const out = await sqs('GetQueueAttributes', { QueueUrl: queueUrl(name), AttributeNames: ['ApproximateNumberOfMessages'] });
  return Number(out.Attributes.ApproximateNumberOfMessages);
}

// ---- the page ---------------------------------------------------------------
async function cell(page, queue, field) {
  return page.$eval(`tr[data-queue="${queue}"] td.${field}`, (td) => td.textContent);
}

// waitDepth waits until the queue table shows want in a queue's column.
async function waitDepth(page, queue, field, want, timeout = 15000) {
  await page.waitForFunction(([q, f, w]) => {
    const td = document.querySelector(`tr[data-queue="${q}"] td.${f}`);
    return td && td.textContent === String(w);
  }, [queue, field, want], { timeout });
}

async function selectQueue(page, name) {
  await page.click(`tr[data-queue="${name}"] td.name button`);
  await page.waitForFunction((n) => document.getElementById('detail-name').textContent === n && !document.getElementById('detail').hidden, name);
}

// tableRows is the queue table as the DOM has it now.
async function tableRows(page) {
  return page.$$eval('#queues tbody tr', (trs) => trs.map((tr) => [tr.dataset.queue,
    tr.querySelector('td.visible').textContent, tr.querySelector('td.inflight').textContent, tr.querySelector('td.delayed').textContent]));
}

// ---- screenshots ----------------------------------------------------------------
// checkPNG: a PNG of the viewport's size whose pixels are not all alike.
function checkPNG(file) {
  const b = readFileSync(file);
  assert.ok(statSync(file).size > 10000, `${file}: ${b.length} bytes`);
  assert.deepEqual([...b.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${file}: not a PNG`);
  assert.equal(b.toString('latin1', 12, 16), 'IHDR');
  assert.equal(b.readUInt32BE(16), VIEW.width, `${file}: width`);
  assert.equal(b.readUInt32BE(20), VIEW.height, `${file}: height`);
  const idat = [];
  for (let off = 8; off < b.length;) {
    const len = b.readUInt32BE(off);
    const type = b.toString('latin1', off + 4, off + 8);
    if (type === 'IDAT') idat.push(b.subarray(off + 8, off + 8 + len));
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const seen = new Set();
  for (let i = 0; i < raw.length; i += 97) seen.add(raw[i]);
  assert.ok(seen.size > 16, `${file}: looks blank (${seen.size} distinct sampled bytes)`);
}

async function shoot(page, name, checkDOM) {
  const file = join(SHOTS, name);
  await checkDOM(); // what the page shows as the shot is taken
  await page.screenshot({ path: file });
  await checkDOM();
  checkPNG(file);
  console.log(`   screenshot ${file}`);
}

// ---- the run ------------------------------------------------------------------
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking'],
});
try {
  await step('queues created through the SQS API', async () => {
    const dlq = await sqs('CreateQueue', { QueueName: 'orders-dlq' });
    const arn = (await sqs('GetQueueAttributes', { QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] })).Attributes.QueueArn;
    await sqs('CreateQueue', { QueueName: 'orders', Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 1 }) } });
    await sqs('CreateQueue', { QueueName: 'jobs.fifo', Attributes: { FifoQueue: 'true' } });
  });

  const ctx = await browser.newContext({ viewport: VIEW, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  // Chromium logs each 4xx answer ("Failed to load resource"); the errors
  // this run provokes on purpose are checked where they are shown.
  page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) pageErrors.push(m.text()); });

  await step('the console lists the queues with their depths', async () => {
    const resp = await page.goto(OPEN + CONSOLE);
    assert.equal(resp.status(), 200);
    await page.waitForSelector('tr[data-queue="orders"]');
    assert.deepEqual(await tableRows(page), [
      ['jobs.fifo', '0', '0', '0'], ['orders', '0', '0', '0'], ['orders-dlq', '0', '0', '0']]);
    assert.match(await page.textContent('#who'), /account 000000000000 · us-east-1 · open/);
    assert.equal(await page.textContent('tr[data-queue="orders"] td.dlq-target'), 'orders-dlq');
    assert.equal(await page.textContent('tr[data-queue="orders-dlq"] .badge.dlq'), 'DLQ');
    assert.equal(await page.textContent('tr[data-queue="jobs.fifo"] .badge.fifo'), 'FIFO');
  });

  await step('send two messages through the form', async () => {
    await selectQueue(page, 'orders');
    assert.equal(await page.isVisible('input[name="groupId"]'), false, 'group id shown for a standard queue');
    for (const body of ['first message', 'second message']) {
      await page.fill('textarea[name="body"]', body);
      await page.click('#send');
      await page.waitForSelector('#send-result.ok');
    }
    await waitDepth(page, 'orders', 'visible', 2);
    assert.equal(await depth('orders'), 2, 'the server holds the two messages');
    assert.match(await page.textContent('#attributes'), /VisibilityTimeout\s*30/);
    assert.match(await page.textContent('#attributes'), /RedrivePolicy/);
  });

  await step('screenshot: queues and a selected queue', () => shoot(page, 'console-queues.png', async () => {
    assert.deepEqual(await tableRows(page), [
      ['jobs.fifo', '0', '0', '0'], ['orders', '2', '0', '0'], ['orders-dlq', '0', '0', '0']]);
    assert.equal(await page.textContent('#detail-name'), 'orders');
  }));

  await step('FIFO send: AWS\'s error without a group id, then a send with group and dedup ids', async () => {
    await selectQueue(page, 'jobs.fifo');
    assert.equal(await page.isVisible('input[name="groupId"]'), true);
    await page.fill('input[name="groupId"]', '');
    await page.fill('textarea[name="body"]', 'job 1');
    await page.click('#send');
    await page.waitForSelector('#send-result.error');
    assert.equal(await page.textContent('#send-result'), 'MissingParameter: The request must contain the parameter MessageGroupId.');
    await page.fill('input[name="groupId"]', 'g1');
    await page.fill('input[name="dedupId"]', 'd1');
    await page.click('#send');
    await page.waitForSelector('#send-result.ok');
    assert.match(await page.textContent('#send-result'), /^Sent: message [0-9a-f-]{36}, sequence number \d+$/);
    await waitDepth(page, 'jobs.fifo', 'visible', 1);
    assert.equal(await depth('jobs.fifo'), 1);
  });

  await step('peek shows the messages and leaves them visible', async () => {
    await selectQueue(page, 'orders');
    assert.match(await page.textContent('.card .note'), /counts as a receive/);
    await page.click('#peek');
    await page.waitForSelector('#peek-result.ok');
    const bodies = await page.$$eval('#messages .message pre.body', (ps) => ps.map((p) => p.textContent).sort());
    assert.deepEqual(bodies, ['first message', 'second message']);
    const meta = await page.textContent('#messages');
    assert.equal((meta.match(/ReceiveCount 1/g) || []).length, 2, meta);
    assert.equal(await depth('orders'), 2, 'peeked messages stay visible');
    await page.waitForFunction(() => Number(document.body.dataset.polled) > 0);
    const polled = Number(await page.getAttribute('body', 'data-polled'));
    await page.waitForFunction((n) => Number(document.body.dataset.polled) > n, polled);
    assert.equal(await cell(page, 'orders', 'visible'), '2');
    assert.equal(await cell(page, 'orders', 'inflight'), '0');
  });

  await step('screenshot: peeked messages', () => shoot(page, 'console-peek.png', async () => {
    assert.equal(await page.$$eval('#messages .message', (m) => m.length), 2);
    assert.equal(await cell(page, 'orders', 'visible'), '2');
  }));

  await step('a second peek is a receive past maxReceiveCount 1: the messages move to the dead-letter queue', async () => {
    await page.click('#peek');
    await page.waitForFunction(() => document.getElementById('peek-result').textContent === 'No visible messages.');
    await waitDepth(page, 'orders-dlq', 'visible', 2);
    await waitDepth(page, 'orders', 'visible', 0);
  });

  await step('redrive from the dead-letter queue', async () => {
    await selectQueue(page, 'orders-dlq');
    await page.waitForSelector('#redrive-card', { state: 'visible' });
    assert.equal(await page.textContent('#redrive-sources'), 'orders');
    await page.click('#redrive');
    await page.waitForSelector('#redrive-result.ok');
    await waitDepth(page, 'orders', 'visible', 2, 20000);
    await waitDepth(page, 'orders-dlq', 'visible', 0);
    await page.waitForFunction(() => [...document.querySelectorAll('#tasks td.status')].some((td) => td.textContent === 'COMPLETED'), null, { timeout: 10000 });
    assert.equal(await depth('orders'), 2);
  });

  await step('screenshot: redrive done', () => shoot(page, 'console-redrive.png', async () => {
    assert.equal(await cell(page, 'orders', 'visible'), '2');
    assert.equal(await cell(page, 'orders-dlq', 'visible'), '0');
    assert.equal(await page.isVisible('#redrive-card'), true);
  }));

  await step('live rates: sends through the API show as sent/s', async () => {
    const load = [];
    for (let i = 0; i < 40; i++) load.push(sqs('SendMessage', { QueueUrl: queueUrl('orders'), MessageBody: 'load ' + i }));
    await Promise.all(load);
    await page.waitForFunction(() => Number(document.getElementById('rate-sent').textContent.replace(/,/g, '')) >= 5, null, { timeout: 10000 });
    await waitDepth(page, 'orders', 'visible', 42);
  });

  await step('purge, and AWS\'s error for a second purge within 60 s', async () => {
    await selectQueue(page, 'orders');
    await page.click('#purge');
    await page.waitForSelector('#purge-confirm', { state: 'visible' });
    assert.equal(await page.textContent('#purge-name'), 'orders');
    await page.click('#purge-yes');
    await page.waitForSelector('#purge-result.ok');
    await waitDepth(page, 'orders', 'visible', 0);
    assert.equal(await depth('orders'), 0);
  });

  await step('screenshot: purged', () => shoot(page, 'console-purge.png', async () => {
    assert.deepEqual(await tableRows(page), [
      ['jobs.fifo', '1', '0', '0'], ['orders', '0', '0', '0'], ['orders-dlq', '0', '0', '0']]);
    assert.equal(await page.textContent('#purge-result'), 'Purged orders.');
  }));

  await step('second purge', async () => {
    await page.click('#purge');
    await page.click('#purge-yes');
    await page.waitForSelector('#purge-result.error');
    assert.match(await page.textContent('#purge-result'), /^AWS\.SimpleQueueService\.PurgeQueueInProgress: /);
  });

  await step('a page of another origin cannot purge through the console', async () => {
    const other = await ctx.newPage();
    // Same server, another origin, a page without the console's CSP
    // (which would block the requests before CORS or the server could).
    const evil = OPEN.replace('127.0.0.1', 'localhost') + '/healthz';
    await other.goto(evil);
    const target = OPEN + CONSOLE + 'api/purge';
    const outcome = await other.evaluate(async (url) => {
      const r = {};
      try {
        await fetch(url, { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/json', 'X-Sluice-Csrf': 'guess' }, body: '{"queue":"jobs.fifo"}' });
        r.cors = 'sent';
      } catch (e) { r.cors = 'blocked'; }
      await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body: '{"queue":"jobs.fifo"}' });
      return r;
    }, target);
    assert.equal(outcome.cors, 'blocked', 'a cross-origin JSON POST got through the browser');
    assert.equal(await depth('jobs.fifo'), 1, 'a cross-origin request purged the queue');
    await other.close();
  });

  assert.deepEqual(pageErrors, [], 'errors in the page');
  await ctx.close();

  await step('with access keys: no credentials, 401', async () => {
    // Chromium without credentials to give cancels the challenge.
    const anon = await browser.newContext({ viewport: VIEW });
    const p = await anon.newPage();
    const got = await p.goto(SIGNED + CONSOLE).then((r) => 'status ' + r.status(), (e) => e.message);
    assert.match(got, /status 401|ERR_INVALID_AUTH_CREDENTIALS/);
    const resp = await anon.request.get(SIGNED + CONSOLE + 'api/queues');
    assert.equal(resp.status(), 401);
    assert.match(resp.headers()['www-authenticate'] || '', /^Basic realm="sluice console"/);
    await anon.close();
    const wrong = await browser.newContext({ viewport: VIEW, httpCredentials: { username: KEY_ID, password: 'not-the-secret' } });
    const w = await wrong.newPage();
    // Chromium answers the challenge with the credentials once; refused
    // again, it gives up on the navigation.
    const again = await w.goto(SIGNED + CONSOLE).then((r) => 'status ' + r.status(), (e) => e.message);
    assert.match(again, /status 401|ERR_INVALID_AUTH_CREDENTIALS/);
    await wrong.close();
  });

  await step('with access keys: the key\'s id and secret sign in', async () => {
    const signed = await browser.newContext({ viewport: VIEW, deviceScaleFactor: 1, httpCredentials: { username: KEY_ID, password: SECRET } });
    const p = await signed.newPage();
    assert.equal((await p.goto(SIGNED + CONSOLE)).status(), 200);
    await p.waitForFunction(() => /signed in as/.test(document.getElementById('who').textContent));
    assert.match(await p.textContent('#who'), new RegExp('signed in as ' + KEY_ID));
    await p.waitForSelector('#no-queues', { state: 'visible' });
    const status = await p.evaluate(async () => (await fetch('api/purge', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"queue":"x"}' })).status);
    assert.equal(status, 403, 'a POST without the CSRF token');
    await shoot(p, 'console-signed.png', async () => {
      assert.equal(await p.isVisible('#no-queues'), true);
      assert.match(await p.textContent('#who'), /signed in as/);
    });
    await signed.close();
  });
} finally {
  await browser.close();
}
console.log(`${passed} passed`);
