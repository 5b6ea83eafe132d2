// The chat page at / in headless Chromium (Debian's chromium, driven by playwright-core):
// send a message, see streamed text appear, press stop, and the server cancels the generation;
// attach an image (on the vision server) or an audio clip (on the audio server) and get an answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const baseURL = process.env.GEMLET_BASE_URL;  // http://127.0.0.1:PORT/v1
const root = new URL('/', baseURL).toString();
const executablePath = process.env.GEMLET_CHROMIUM || '/usr/bin/chromium';

async function metric(name) {
  const body = await (await fetch(new URL('/metrics', baseURL))).text();
  const line = body.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

test('chat page: send, stream, stop', { timeout: 180_000 }, async () => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemlet-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(60_000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    if (process.env.GEMLET_API_KEY) {  // the page keeps the key in localStorage
      await page.addInitScript((key) => localStorage.setItem('gemlet.apikey', key), process.env.GEMLET_API_KEY);
    }
    await page.goto(root);
    await page.waitForFunction(() => document.getElementById('model').textContent.length > 1);

    // The markdown renderer (escapes HTML, renders code, bold, lists).
    const html = await page.evaluate(() => markdown('**b** `x<y`\n\n- one\n- two\n\n```\n<tag>\n```'));
    assert.match(html, /<strong>b<\/strong>/);
    assert.match(html, /<code>x&lt;y<\/code>/);
    assert.match(html, /<ul><li>one<\/li><li>two<\/li><\/ul>/);
    assert.match(html, /<pre><code>&lt;tag&gt;\n<\/code><\/pre>/);

    // The random model may end its turn after a few tokens, wander into a thought channel or a
    // tool call, or fall into a loop of a hidden control token: ask for a long plain reply so
    // there is visible text to stop. ignore_eos is a request extension (as in llama.cpp and
    // vLLM); logit_bias -100 bans <|tool_call> (48) and <|channel> (100); the penalties break
    // repetition loops.
    await page.route('**/v1/chat/completions', (route) => {
      const body = JSON.parse(route.request().postData());
      route.continue({ postData: JSON.stringify({
        ...body, ignore_eos: true, logit_bias: { 48: -100, 100: -100 }, seed: 1,
        presence_penalty: 2, frequency_penalty: 2,
      }) });
    });
    const cancelled0 = await metric('gemlet_requests_cancelled_total');
    await page.fill('#max_tokens', '100000');
    await page.fill('#input', 'Hello there!');
    await page.click('#send');
    // Streamed text appears while the reply is still being generated (stop is enabled).
    try {
      await page.waitForFunction(() => {
        const c = document.querySelector('.msg.assistant .content');
        return c && c.textContent.length > 20;
      }, null, { timeout: 60_000 });
    } catch (e) {
      const state = await page.evaluate(() => ({
        log: document.getElementById('log').innerHTML.slice(0, 2000),
        status: document.getElementById('status').textContent,
      }));
      console.error('page state:', JSON.stringify(state), 'decode tokens:',
                    await metric('gemlet_decode_tokens_total'), 'page errors:', errors);
      throw e;
    }
    assert.equal(await page.isEnabled('#stop'), true);
    const before = await page.textContent('.msg.assistant .content');
    await page.waitForFunction((n) => document.querySelector('.msg.assistant .content').textContent.length > n,
                               before.length, { timeout: 60_000 });
    await page.click('#stop');
    await page.waitForSelector('.msg.assistant[data-done="stopped"]', { timeout: 30_000 });
    assert.equal(await page.isEnabled('#send'), true);
    assert.equal(await page.isEnabled('#stop'), false);
    // The text no longer grows, and the server cancelled the generation.
    const after = await page.textContent('.msg.assistant .content');
    await page.waitForTimeout(500);
    assert.equal(await page.textContent('.msg.assistant .content'), after);
    let cancelled = cancelled0;
    for (let i = 0; i < 300 && cancelled === cancelled0; i++) {  // up to 30 s
      await new Promise((r) => setTimeout(r, 100));
      cancelled = await metric('gemlet_requests_cancelled_total');
    }
    assert.equal(cancelled, cancelled0 + 1, 'the server did not cancel the stopped generation');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
});

test('chat page: thinking is sent as a request field and shown apart from the answer', { timeout: 120_000 }, async () => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemlet-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(60_000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    if (process.env.GEMLET_API_KEY) {
      await page.addInitScript((key) => localStorage.setItem('gemlet.apikey', key), process.env.GEMLET_API_KEY);
    }
    await page.goto(root);
    await page.waitForFunction(() => document.getElementById('model').textContent.length > 1);
    // The random model cannot be made to think, so this reply is scripted: the page's request
    // is captured and answered with the SSE chunks a thinking Gemma 4 reply produces.
    const sse = (delta, finish = null) => `data: ${JSON.stringify({
      id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 0, model: 'm',
      choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    let sent = null;
    await page.route('**/v1/chat/completions', (route) => {
      sent = JSON.parse(route.request().postData());
      route.fulfill({
        status: 200, contentType: 'text/event-stream',
        body: sse({ role: 'assistant', content: '' }) + sse({ reasoning_content: 'The user wants ' }) +
              sse({ reasoning_content: 'a bold word.' }) + sse({ content: 'Here: **bold**' }) +
              sse({}, 'stop') + 'data: [DONE]\n\n',
      });
    });
    await page.check('#thinking');
    await page.fill('#input', 'Think, then answer.');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-done="finished"]', { timeout: 60_000 });
    assert.equal(sent.reasoning_effort, 'medium');
    assert.equal(sent.stream, true);
    assert.equal(await page.isHidden('.msg.assistant details.thinking'), false);
    assert.equal((await page.textContent('.msg.assistant details.thinking')).includes('The user wants a bold word.'), true);
    assert.equal(await page.innerHTML('.msg.assistant .content'), '<p>Here: <strong>bold</strong></p>');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
});

// Attaches `file` with the page's `input` (#image or #audio) on the server at `url`, sends a
// message and checks the request's first part (`check`) and the streamed 8-token answer.
async function attachAndAsk(url, input, file, shown, check) {
  const serverRoot = new URL('/', url).toString();
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemlet-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(60_000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    if (process.env.GEMLET_API_KEY) {
      await page.addInitScript((key) => localStorage.setItem('gemlet.apikey', key), process.env.GEMLET_API_KEY);
    }
    await page.goto(serverRoot);
    await page.waitForFunction(() => document.getElementById('model').textContent.length > 1);
    // The page's own request goes to the server; only the reply's length and greediness are set
    // (the random model may end its turn at once).
    let sent = null;
    await page.route('**/v1/chat/completions', (route) => {
      sent = JSON.parse(route.request().postData());
      route.continue({ postData: JSON.stringify({ ...sent, ignore_eos: true, temperature: 0, max_tokens: 8 }) });
    });
    let replyBody = null;
    page.on('response', async (r) => {
      if (r.url().endsWith('/v1/chat/completions')) replyBody = await r.text().catch((e) => String(e));
    });
    await page.setInputFiles(input, file);
    await page.waitForSelector(`#attached ${shown}`);
    await page.fill('#input', 'What is it?');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-done="finished"]', { timeout: 120_000 });
    // The request carried the attachment before the text.
    const parts = sent.messages[sent.messages.length - 1].content;
    check(parts[0]);
    assert.deepEqual(parts[1], { type: 'text', text: 'What is it?' });
    assert.equal(await page.isVisible(`.msg.user ${shown}`), true);
    assert.equal(await page.$('.msg.assistant.error'), null, await page.textContent('.msg.assistant'));
    // The server streamed the 8 tokens (their text may be blank: the weights are random).
    for (let i = 0; i < 100 && replyBody === null; i++) await page.waitForTimeout(100);
    assert.match(replyBody, /"completion_tokens":8/);
    assert.equal(await page.$(`#attached ${shown}`), null);  // sent: nothing stays attached
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

test('chat page: attach an image and get an answer about it', { timeout: 180_000 }, async () => {
  const image = path.join(process.env.GEMLET_SHARED_DIR, 'oracle', 'tiny-e2b-vision', 'image-A.png');
  await attachAndAsk(process.env.GEMLET_VISION_URL, '#image', image, 'img', (part) => {
    assert.equal(part.type, 'image_url');
    assert.ok(part.image_url.url.startsWith('data:image/png;base64,'));
  });
});

test('chat page: attach an audio clip and get an answer about it', { timeout: 180_000 }, async () => {
  const wav = path.join(process.env.GEMLET_SHARED_DIR, 'oracle', 'tiny-e2b-audio', 'sweep.wav');
  await attachAndAsk(process.env.GEMLET_AUDIO_URL, '#audio', wav, 'audio', (part) => {
    assert.equal(part.type, 'input_audio');
    assert.equal(part.input_audio.format, 'wav');
    assert.deepEqual(Buffer.from(part.input_audio.data, 'base64'), fs.readFileSync(wav));
  });
});
