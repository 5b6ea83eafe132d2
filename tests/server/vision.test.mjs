// Image input through `gemlet serve` on the tiny vision oracle (../shared/oracle/tiny-e2b-vision,
// converted by run.sh; served with --image-tokens 70): the official OpenAI client streams an
// answer to a chat turn with a PNG data URL; 8 concurrent requests with different images each
// get, greedily, what they get alone; a second turn about the same image does not encode it
// again; the Ollama and Anthropic clients send images too; bad images (a truncated JPEG, a PNG
// with a broken CRC, a 0×0 and a 100000×100000 declared size, random bytes, a non-image data
// URL, an http URL) are each a 400 naming the part, and the server keeps serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.GEMLET_VISION_URL;  // http://127.0.0.1:PORT/v1
const apiKey = process.env.GEMLET_API_KEY || 'unused';
const shared = process.env.GEMLET_SHARED_DIR;
assert.ok(baseURL, 'GEMLET_VISION_URL is not set (run tests/server/run.sh)');
assert.ok(shared, 'GEMLET_SHARED_DIR is not set (run tests/server/run.sh)');
const dir = path.join(shared, 'oracle', 'tiny-e2b-vision');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 300_000 });
const root = new URL('/', baseURL).toString();

function file(name) { return fs.readFileSync(path.join(dir, name)); }
function dataUrl(bytes, type = 'image/png') { return `data:${type};base64,${Buffer.from(bytes).toString('base64')}`; }

// Eight different images: the oracle's three PNGs and three JPEGs, and two of its resized PNGs
// (at 140 tokens: resized again for the server's 70, unlike resized-*-70.png, whose pixels are
// what image-*.png becomes at 70).
const kImages = ['image-A.png', 'image-B.png', 'image-C.png', 'image-A.jpg', 'image-B.jpg', 'image-C.jpg',
  'resized-B-140.png', 'resized-C-140.png'];
function typeOf(name) { return name.endsWith('.jpg') ? 'image/jpeg' : 'image/png'; }

function turn(url, text = 'What is it?') {
  return [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text }] }];
}

async function metric(name) {
  const body = await (await fetch(new URL('/metrics', baseURL))).text();
  const line = body.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

// A greedy reply, with each token's log-probability: the random model's greedy text is often
// the same for different images, but its log-probabilities are not.
async function greedy(messages, max_tokens = 12) {
  const r = await client.chat.completions.create({
    model: 'tiny-vision', messages, max_tokens, temperature: 0, ignore_eos: true, logprobs: true,
  });
  const logprobs = r.choices[0].logprobs.content.map((t) => t.logprob);
  return { text: r.choices[0].message.content, usage: r.usage, logprobs };
}

test('a chat turn with a PNG data URL streams an answer (official openai client)', async () => {
  const stream = await client.chat.completions.create({
    model: 'tiny-vision', messages: turn(dataUrl(file('image-A.png'))), max_tokens: 12, temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.content) { text += c.delta.content; chunks++; }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'length');
  assert.ok(chunks >= 1 && text.length > 0, 'no streamed text');
  // The prompt holds the image's 70 soft tokens (plus its boi and eoi) besides the text.
  assert.ok(usage.prompt_tokens > 72, `prompt_tokens ${usage.prompt_tokens}`);
  assert.equal(usage.completion_tokens, 12);
  // The same request, not streamed, is the same greedy text.
  const whole = await greedy(turn(dataUrl(file('image-A.png'))));
  assert.equal(whole.text, text);
});

test('8 concurrent requests with different images each get what they get alone', { timeout: 600_000 }, async () => {
  const answer = (r) => ({ text: r.text, logprobs: r.logprobs });
  const alone = [];
  for (const name of kImages) alone.push(answer(await greedy(turn(dataUrl(file(name), typeOf(name))))));
  // Different images give different answers (the image reaches the model).
  assert.equal(new Set(alone.map((a) => JSON.stringify(a))).size, kImages.length,
    `answers: ${JSON.stringify(alone)}`);
  const together = await Promise.all(kImages.map((name) => greedy(turn(dataUrl(file(name), typeOf(name))))));
  assert.deepEqual(together.map(answer), alone);
});

test('a second turn about the same image does not encode it again', async () => {
  const url = dataUrl(file('resized-C-70.png'));
  const first = await greedy(turn(url), 4);
  const encodes = await metric('gemlet_image_encodes_total');
  assert.ok(encodes >= 1);
  const second = await greedy([...turn(url), { role: 'assistant', content: first.text },
    { role: 'user', content: 'And now?' }], 4);
  assert.equal(await metric('gemlet_image_encodes_total'), encodes);
  // The prefix cache resumed past the image (its rows matched by content).
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 72,
    JSON.stringify(second.usage));
});

test('Ollama images and Anthropic image blocks', async () => {
  const want = (await greedy(turn(dataUrl(file('image-B.png'))), 6)).text;
  const ollama = new Ollama({ host: root.replace(/\/$/, ''), headers: { Authorization: `Bearer ${apiKey}` } });
  const o = await ollama.chat({
    model: 'tiny-vision', stream: false,
    messages: [{ role: 'user', content: 'What is it?', images: [file('image-B.png').toString('base64')] }],
    options: { temperature: 0, num_predict: 6 },
  });
  assert.ok(o.message.content.length > 0);
  const anthropic = new Anthropic({ baseURL: root.replace(/\/$/, ''), apiKey, maxRetries: 0 });
  const a = await anthropic.messages.create({
    model: 'tiny-vision', max_tokens: 6, temperature: 0,
    messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: file('image-B.png').toString('base64') } },
      { type: 'text', text: 'What is it?' }] }],
  });
  assert.equal(a.content[0].type, 'text');
  // Both render the same prompt as the OpenAI request (greedy, but they may stop at a stop token).
  assert.ok(want.startsWith(a.content[0].text), `${JSON.stringify(want)} vs ${JSON.stringify(a.content[0].text)}`);
  assert.ok(want.startsWith(o.message.content), `${JSON.stringify(want)} vs ${JSON.stringify(o.message.content)}`);
  // A bad Ollama image names its field.
  await assert.rejects(ollama.chat({ model: 'tiny-vision', stream: false,
    messages: [{ role: 'user', content: 'x', images: [Buffer.from('not an image').toString('base64')] }] }),
  (e) => /messages\[0\]\.images\[0\]/.test(e.message));
});

// CRC-32 (PNG chunks).
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
// A PNG whose header declares width × height (8-bit RGB), with a small IDAT.
function pngDeclaring(width, height) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', Buffer.from([0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])), chunk('IEND', Buffer.alloc(0))]);
}

test('bad images are 400s naming the part; the server keeps serving', async () => {
  const jpg = file('image-A.jpg');
  const png = Buffer.from(file('image-B.png'));
  const broken = Buffer.from(png);
  broken[40] ^= 0xff;  // inside the first IDAT: its CRC no longer matches
  let seed = 7;
  const random = Buffer.from(Array.from({ length: 4096 }, () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24));
  const cases = [
    ['truncated JPEG', dataUrl(jpg.subarray(0, jpg.length >> 1), 'image/jpeg')],
    ['PNG with a broken CRC', dataUrl(broken)],
    ['0x0 PNG', dataUrl(pngDeclaring(0, 0))],
    ['100000x100000 PNG', dataUrl(pngDeclaring(100000, 100000))],
    ['random bytes', dataUrl(random)],
    ['non-image data URL', 'data:text/plain;base64,aGVsbG8='],
    ['not base64', 'data:image/png;base64,!!!!'],
    ['http URL (not fetched by default)', 'http://127.0.0.1:9/image.png'],
  ];
  for (const [what, url] of cases) {
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'Look:' }, { type: 'image_url', image_url: { url } }] }];
    await assert.rejects(client.chat.completions.create({ model: 'tiny-vision', messages, max_tokens: 4 }),
      (e) => {
        assert.equal(e.status, 400, `${what}: status ${e.status}`);
        assert.match(e.message, /messages\[0\]\.content\[1\]/, `${what}: ${e.message}`);
        return true;
      }, what);
  }
  // Still serving, with the same answer as before.
  const r = await greedy(turn(dataUrl(file('image-A.png'))), 3);
  assert.ok(r.text.length > 0);
});

test('a text-only model refuses image parts with a 400', async () => {
  const text = new OpenAI({ baseURL: process.env.GEMLET_BASE_URL, apiKey, maxRetries: 0 });
  await assert.rejects(text.chat.completions.create({ model: 'x', messages: turn(dataUrl(file('image-A.png'))), max_tokens: 2 }),
    (e) => e.status === 400 && /vision tower/.test(e.message));
});
