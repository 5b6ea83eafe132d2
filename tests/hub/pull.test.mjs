// `gemlet pull` against a local stand-in for the Hugging Face Hub (hub_server.mjs): a fresh
// download, an interrupted one that resumes (within one run, and across runs from the *.part
// file), a gated repository without and with a token, a corrupted file refused, the pulled
// model run by name in `run` and `serve` (each stored model drafting with its own MTP
// drafter), then `list` and `rm`; serve's JSON request log and its SIGTERM mid-stream.
// Run by tests/hub/run.sh:  GEMLET_BINARY=... GEMLET_SHARED_DIR=... node --test pull.test.mjs
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startHub } from './hub_server.mjs';

const gemlet = process.env.GEMLET_BINARY;
const shared = process.env.GEMLET_SHARED_DIR;
assert.ok(gemlet && existsSync(gemlet), 'GEMLET_BINARY must name the gemlet binary');
assert.ok(shared && existsSync(`${shared}/oracle/tiny-e2b`), 'GEMLET_SHARED_DIR must hold oracle/tiny-e2b');
const tiny = `${shared}/oracle/tiny-e2b`;
const TOKEN = 'hf_test_token_1234';
const work = mkdtempSync(join(tmpdir(), 'gemlet-pull-'));
let hub;

// Runs gemlet asynchronously (the hub runs in this process: a blocking spawn would starve it).
function run(args, { store, env = {}, timeoutMs = 120000 } = {}) {
  return new Promise((resolve, reject) => {
    const e = { ...process.env, HF_ENDPOINT: hub.url, GEMLET_MODELS: store, ...env };
    delete e.HF_TOKEN;
    delete e.HUGGING_FACE_HUB_TOKEN;
    Object.assign(e, env);
    const child = spawn(gemlet, args, { env: e, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`gemlet ${args.join(' ')} timed out`)); }, timeoutMs);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}
const freshStore = (name) => join(work, name);
const cdnRequests = (from) => hub.requests.slice(from).filter((r) => r.url.startsWith('/cdn/'));
const list = async (store) => JSON.parse((await run(['list', '--json'], { store })).stdout);

before(async () => {
  hub = await startHub({
    files: ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json',
            'tokenizer_config.json'].map((f) => `${tiny}/${f}`),
    repos: { 'test/tiny': 'public', 'test/gated': 'gated', 'test/flaky': 'flaky',
             'test/flaky2': 'flaky', 'test/corrupt': 'corrupt' },
    token: TOKEN,
  });
});
after(async () => {
  await hub?.close();
  rmSync(work, { recursive: true, force: true });
});

test('a fresh pull stores the model by name, checks it, deletes the download; run uses it', async () => {
  const store = freshStore('fresh');
  const from = hub.requests.length;
  const r = await run(['pull', 'test/tiny'], { store });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /stored/);
  // Off a terminal the download's progress is plain lines with the speed, labelled pull
  // (the conversion's own lines that follow are labelled convert).
  assert.match(r.stderr, /^pull: 100% [\d.]+ [KMG]B \/ [\d.]+ [KMG]B, [\d.]+ [KMG]B\/s, /m);
  // The listing was asked with blobs=true, the weights came through the CDN redirect, and
  // the README and the onnx/ subfolder were not downloaded.
  const urls = hub.requests.slice(from).map((q) => q.url);
  assert.ok(urls.includes('/api/models/test/tiny/revision/main'), urls.join(' '));
  assert.ok(urls.includes('/test/tiny/resolve/main/model.safetensors'));
  assert.equal(cdnRequests(from).length, 2);  // model.safetensors and tokenizer.json
  assert.ok(!urls.some((u) => u.includes('README') || u.includes('onnx')));
  const models = await list(store);
  assert.equal(models.length, 1);
  assert.equal(models[0].name, 'test/tiny');
  assert.equal(models[0].commit, hub.commit);
  assert.ok(models[0].bytes > 0);
  assert.deepEqual(readdirSync(join(store, '.downloads')), []);  // the checkpoint is gone

  // The pulled model runs by name and gives the same tokens as converting the folder by hand.
  const direct = join(work, 'direct.gemlet');
  assert.equal((await run(['convert', tiny, '-o', direct, '-q'], { store })).code, 0);
  const args = ['-p', 'Hello', '-n', '6', '--temp', '0', '--threads', '1', '--json'];
  const byName = await run(['run', '-m', 'test/tiny', ...args], { store });
  assert.equal(byName.code, 0, byName.stderr);
  const byPath = await run(['run', '-m', direct, ...args], { store });
  assert.equal(byPath.code, 0, byPath.stderr);
  assert.deepEqual(JSON.parse(byName.stdout).ids, JSON.parse(byPath.stdout).ids);
  // The short name works too when it is unambiguous; `info` takes the name as well.
  const short = await run(['run', '-m', 'tiny', ...args], { store });
  assert.equal(short.code, 0, short.stderr);
  const info = await run(['info', 'test/tiny', '--json'], { store });
  assert.equal(info.code, 0, info.stderr);

  // Pulling the same commit again downloads nothing.
  const again = hub.requests.length;
  const r2 = await run(['pull', 'test/tiny'], { store });
  assert.equal(r2.code, 0, r2.stderr);
  assert.match(r2.stderr, /up to date/);
  assert.equal(hub.requests.slice(again).filter((q) => q.url.includes('/resolve/')).length, 0);

  // rm deletes it; a second rm says there is no such model.
  assert.equal((await run(['rm', 'test/tiny'], { store })).code, 0);
  assert.deepEqual(await list(store), []);
  const rm2 = await run(['rm', 'test/tiny'], { store });
  assert.equal(rm2.code, 1);
  assert.match(rm2.stderr, /no stored model named 'test\/tiny'/);
});

test('a gated repository: 401 without a token says to set HF_TOKEN; with it the pull works', async () => {
  const store = freshStore('gated');
  const denied = await run(['pull', 'test/gated'], { store });
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, /HTTP 401.*HF_TOKEN/);
  assert.deepEqual(await list(store), []);
  const wrong = await run(['pull', 'test/gated'], { store, env: { HF_TOKEN: 'hf_wrong' } });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /HTTP 401.*token \(HF_TOKEN\) was refused/);

  const from = hub.requests.length;
  const ok = await run(['pull', 'test/gated', '--keep-source'], { store, env: { HF_TOKEN: TOKEN } });
  assert.equal(ok.code, 0, ok.stderr);
  // The token went to the hub, never to the CDN (another host name).
  const mine = hub.requests.slice(from);
  assert.ok(mine.filter((q) => !q.url.startsWith('/cdn/')).every((q) => q.auth === `Bearer ${TOKEN}`));
  assert.ok(cdnRequests(from).length > 0);
  assert.ok(cdnRequests(from).every((q) => q.auth === null && q.host.startsWith('localhost:')));
  // --keep-source keeps the checkpoint, whole and without .part files.
  const src = join(store, '.downloads', 'test', 'gated');
  const kept = readdirSync(src).sort();
  assert.deepEqual(kept, ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json',
                          'tokenizer_config.json']);
  assert.equal((await list(store))[0].name, 'test/gated');
});

test('an interrupted transfer resumes with a Range request, in the same run', async () => {
  const store = freshStore('flaky');
  const from = hub.requests.length;
  const r = await run(['pull', 'test/flaky'], { store });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /resuming at byte [1-9]/);
  const ranges = cdnRequests(from).map((q) => q.range).filter(Boolean);
  assert.ok(ranges.length >= 2 && ranges.every((x) => /^bytes=[1-9]\d*-$/.test(x)), JSON.stringify(ranges));
  assert.equal((await list(store))[0].name, 'test/flaky');
});

test('an interrupted pull keeps its .part file and the next pull resumes from it', async () => {
  const store = freshStore('flaky2');
  const first = await run(['pull', 'test/flaky2', '--retries', '0'], { store });
  assert.equal(first.code, 1);
  assert.match(first.stderr, /partial download .*\.part is kept: run the same pull again to resume/);
  const dl = join(store, '.downloads', 'test', 'flaky2');
  assert.ok(readdirSync(dl).some((f) => f.endsWith('.part')));
  // The next run's first request for the weights asks for the rest only.
  const weights = hub.blobs.find((b) => b.name === 'model.safetensors');
  const from = hub.requests.length;
  const second = await run(['pull', 'test/flaky2'], { store });
  assert.equal(second.code, 0, second.stderr);
  const resumed = cdnRequests(from).find((q) => q.url === `/cdn/${weights.sha256}`);
  assert.match(resumed?.range ?? "", /^bytes=[1-9]\d*-$/);
  assert.equal((await list(store))[0].name, 'test/flaky2');
});

test('a corrupted file is refused with a clear error and nothing is stored', async () => {
  const store = freshStore('corrupt');
  const r = await run(['pull', 'test/corrupt'], { store });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /model\.safetensors: sha256 mismatch: the hub lists [0-9a-f]{64}, the download has [0-9a-f]{64}/);
  assert.deepEqual(await list(store), []);
  const dl = join(store, '.downloads', 'test', 'corrupt');
  assert.ok(!readdirSync(dl).some((f) => f.startsWith('model.safetensors')));
});

test('bad names: a malformed repository id is a usage error; an unknown one is a 404', async () => {
  const store = freshStore('bad');
  for (const bad of ['nope', 'a/b/c', '../x', 'a/..', 'a/b@', 'a/b@x/y']) {
    const r = await run(['pull', bad], { store });
    assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
  }
  const r = await run(['pull', 'test/missing'], { store });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /HTTP 404: not found/);
});

// Starts `gemlet serve` on a free port; resolves once it prints its address.
function serve(args, store, { log = false } = {}) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, GEMLET_MODELS: store };
    const child = spawn(gemlet, ['serve', '--port', '0', '--threads', '1', ...(log ? [] : ['--no-log']), ...args],
                        { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const proc = { child, log: '' };
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`serve did not start: ${proc.log}`)); }, 60000);
    child.stderr.on('data', (d) => {
      proc.log += d;
      const m = proc.log.match(/ on http:\/\/127\.0\.0\.1:(\d+) /);
      if (m && !proc.url) {
        clearTimeout(timer);
        proc.url = `http://127.0.0.1:${m[1]}`;
        resolve(proc);
      }
    });
    child.on('exit', (code) => { clearTimeout(timer); if (!proc.url) reject(new Error(`serve exited ${code}: ${proc.log}`)); });
  });
}
async function stop(proc) {
  const done = new Promise((resolve) => proc.child.on('exit', resolve));
  proc.child.kill('SIGTERM');
  return done;
}
const chat = (url, model) => fetch(`${url}/v1/chat/completions`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, temperature: 0 }),
});

test('serve offers every stored model and loads the one a request names', async () => {
  const store = freshStore('serve');
  assert.equal((await run(['pull', 'test/tiny', '-q'], { store })).code, 0);
  assert.equal((await run(['pull', 'test/gated', '-q'], { store, env: { HF_TOKEN: TOKEN } })).code, 0);

  // Without -m: the store's models; the first is loaded at start.
  let s = await serve([], store);
  try {
    const models = await (await fetch(`${s.url}/v1/models`)).json();
    assert.deepEqual(models.data.map((m) => m.id), ['test/gated', 'test/tiny']);
    const tags = await (await fetch(`${s.url}/api/tags`)).json();
    assert.deepEqual(tags.models.map((m) => m.name), ['test/gated', 'test/tiny']);
    let r = await chat(s.url, 'test/tiny');
    assert.equal(r.status, 200);
    assert.equal((await r.json()).model, 'test/tiny');
    for (let i = 0; i < 50 && !/loaded test\/tiny/.test(s.log); ++i) await new Promise((res) => setTimeout(res, 100));
    assert.match(s.log, /loaded test\/tiny/);
    r = await chat(s.url, 'test/gated:latest');  // Ollama's tag names it too
    assert.equal(r.status, 200);
    assert.equal((await r.json()).model, 'test/gated');
    r = await chat(s.url, 'nope/missing');
    assert.equal(r.status, 404);
    assert.equal((await r.json()).error.code, 'model_not_found');
    // Ollama's client path: /api/chat names the model the same way.
    r = await fetch(`${s.url}/api/chat`, { method: 'POST', body: JSON.stringify({
      model: 'test/tiny', messages: [{ role: 'user', content: 'Hi' }], stream: false, options: { num_predict: 2 } }) });
    assert.equal(r.status, 200);
    assert.equal((await r.json()).model, 'test/tiny');
  } finally {
    assert.equal(await stop(s), 0);
  }

  // With -m NAME: that model keeps its name, is pinned, and unknown names go to it.
  s = await serve(['-m', 'test/tiny'], store);
  try {
    assert.match(s.log, /test\/tiny and 1 more model on/);
    assert.match(s.log, /, 1 thread\)/);  // not "1 threads"
    const models = await (await fetch(`${s.url}/v1/models`)).json();
    assert.deepEqual(models.data.map((m) => m.id), ['test/tiny', 'test/gated']);
    const r = await chat(s.url, 'gpt-4o');
    assert.equal(r.status, 200);
    assert.equal((await r.json()).model, 'test/tiny');
  } finally {
    assert.equal(await stop(s), 0);
  }
});

const metric = async (url, name) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  assert.ok(m, `${name} in /metrics`);
  return Number(m[1]);
};
const greedy = async (url, model) => {
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, prompt: [2, 105, 437, 107, 346], max_tokens: 24, temperature: 0, ignore_eos: true }),
  });
  assert.equal(r.status, 200);
  return (await r.json()).choices[0].text;
};

test('serve: a drafter belongs to its model; each stored model drafts with its own', async () => {
  const store = freshStore('drafters');
  mkdirSync(join(store, 't'), { recursive: true });
  // The same target twice: once with its MTP drafter embedded (convert --assistant), once without.
  const assistant = `${shared}/oracle/tiny-e2b-assistant`;
  let r = await run(['convert', tiny, '--assistant', assistant, '-o', join(store, 't', 'bundle.gemlet'), '-q'], { store });
  assert.equal(r.code, 0, r.stderr);
  r = await run(['convert', tiny, '-o', join(store, 't', 'plain.gemlet'), '-q'], { store });
  assert.equal(r.code, 0, r.stderr);
  const drafter = join(work, 'drafter.gemlet');
  r = await run(['convert', assistant, '-o', drafter, '-q'], { store });
  assert.equal(r.code, 0, r.stderr);
  // --drafter without -m: whose drafter would it be?
  r = await run(['serve', '--port', '0', '--drafter', drafter], { store });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /give that model with -m/);

  let s = await serve(['--draft-max', '3', '--draft-fixed', '--max-models', '2'], store);
  try {
    assert.match(s.log, /draft auto when one request decodes alone/);  // t/bundle, loaded at start
    const drafted = await greedy(s.url, 't/bundle');
    const rounds = await metric(s.url, 'gemlet_draft_rounds_total');
    assert.ok(rounds > 0, 'the bundle drafts with its embedded drafter');
    // The drafter-less model does not draft (auto without a drafter is off), and its greedy
    // text is the same: drafting changes only the speed.
    assert.equal(await greedy(s.url, 't/plain'), drafted);
    assert.equal(await metric(s.url, 'gemlet_draft_rounds_total'), rounds);
    assert.equal(await greedy(s.url, 't/bundle'), drafted);
    assert.ok(await metric(s.url, 'gemlet_draft_rounds_total') > rounds);
  } finally {
    assert.equal(await stop(s), 0);
  }

  // --draft mtp: a stored model without a drafter is served without drafting (and says so).
  s = await serve(['--draft', 'mtp', '--draft-max', '3', '--draft-fixed'], store);
  try {
    const text = await greedy(s.url, 't/plain');
    for (let i = 0; i < 50 && !/has no MTP drafter/.test(s.log); ++i) await new Promise((res) => setTimeout(res, 100));
    assert.match(s.log, /plain\.gemlet has no MTP drafter: it does not draft/);
    assert.equal(await metric(s.url, 'gemlet_draft_rounds_total'), 0);
    assert.equal(await greedy(s.url, 't/bundle'), text);
    assert.ok(await metric(s.url, 'gemlet_draft_rounds_total') > 0);
  } finally {
    assert.equal(await stop(s), 0);
  }

  // -m with --drafter: the pinned model drafts with that file; a stored one is untouched.
  s = await serve(['-m', join(store, 't', 'plain.gemlet'), '--drafter', drafter, '--draft-max', '3', '--draft-fixed'], store);
  try {
    assert.match(s.log, /draft auto when one request decodes alone/);
    const text = await greedy(s.url, 'plain');
    assert.ok(await metric(s.url, 'gemlet_draft_rounds_total') > 0);
    assert.equal(await greedy(s.url, 't/bundle'), text);
  } finally {
    assert.equal(await stop(s), 0);
  }
});

// `serve --log-format json --verbose`: one JSON line per request on stderr (time, method, path,
// status, tokens, duration, client, user agent) written after the reply's last byte, and a
// line per scheduler step.
test('serve --log-format json --verbose logs each request and each step as JSON', async () => {
  const store = freshStore('log');
  assert.equal((await run(['pull', 'test/tiny', '-q'], { store })).code, 0);
  const s = await serve(['-m', 'test/tiny', '--log-format', 'json', '--verbose'], store, { log: true });
  let lines;
  try {
    assert.equal((await fetch(`${s.url}/health`, { headers: { 'User-Agent': 'audit/1' } })).status, 200);
    const r = await chat(s.url, 'test/tiny');
    assert.equal(r.status, 200);
    const usage = (await r.json()).usage;
    for (let i = 0; i < 50; ++i) {
      lines = s.log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      if (lines.some((j) => j.path === '/v1/chat/completions')) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const health = lines.find((j) => j.path === '/health');
    assert.ok(health, s.log);
    assert.equal(health.method, 'GET');
    assert.equal(health.status, 200);
    assert.equal(health.prompt_tokens, null);
    assert.equal(health.user_agent, 'audit/1');
    assert.match(health.time, /^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match(health.client, /^127\.0\.0\.1:\d+$/);
    const gen = lines.find((j) => j.path === '/v1/chat/completions');
    assert.ok(gen, s.log);
    assert.equal(gen.method, 'POST');
    assert.equal(gen.status, 200);
    assert.equal(gen.prompt_tokens, usage.prompt_tokens);
    assert.equal(gen.completion_tokens, usage.completion_tokens);
    assert.ok(gen.duration_ms > 0);
    const steps = lines.filter((j) => j.step);
    assert.ok(steps.length >= 1, s.log);
    assert.equal(steps[0].step.prefill_rows, usage.prompt_tokens);
  } finally {
    assert.equal(await stop(s), 0);
  }
});

// SIGTERM to the real process while a stream runs: the stream still running after the grace
// ends with a chunk whose finish_reason is "cancelled", an error event and [DONE] (it was cut
// after an ordinary chunk), and the process exits 0.
test('serve: SIGTERM mid-stream ends the stream with a finish_reason, an error and [DONE]', async () => {
  const store = freshStore('sigterm');
  assert.equal((await run(['pull', 'test/tiny', '-q'], { store })).code, 0);
  const s = await serve(['-m', 'test/tiny', '--shutdown-grace', '0.2', '--ctx', '100000'], store);
  const exited = new Promise((resolve) => s.child.on('exit', resolve));
  const r = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], stream: true, ignore_eos: true,
                           max_tokens: 90000 }),
  });
  assert.equal(r.status, 200);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('"content":')) {
    const { value, done } = await reader.read();
    assert.ok(!done, `the stream ended before any content: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
  s.child.kill('SIGTERM');
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  assert.equal(await exited, 0, s.log);
  const tail = text.slice(-2000);
  assert.match(tail, /"finish_reason":"cancelled"/, tail);
  assert.match(tail, /shutting down/, tail);
  assert.match(tail, /data: \[DONE\]\n\n$/, tail);
  assert.match(s.log, /shutting down \(running requests get 0\.2 s\)/);
});
