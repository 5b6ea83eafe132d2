// Hostile input against the real `gemlet serve` binary (run.sh starts it; under an ASan build
// any memory error or leak then fails run.sh): malformed JSON, wrong types, invalid UTF-8,
// unknown roles, a 100 MB body and 1000 requests of random garbage all get a 4xx answer with
// an OpenAI-shaped JSON error, and the server keeps serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

const baseURL = process.env.GEMLET_BASE_URL;  // http://127.0.0.1:PORT/v1
assert.ok(baseURL, 'GEMLET_BASE_URL is not set (run tests/server/run.sh)');
const origin = new URL(baseURL);
const port = Number(origin.port);
// Timing budgets are multiplied by this (ctest sets 2, 3 under the sanitizers:
// tools/server/CMakeLists.txt; beside another test binary on 2 cores a /health reply once took
// over 1 s, in the release and the ASan stage).
const timeScale = Number(process.env.GEMLET_TIME_SCALE || 1);
const key = process.env.GEMLET_API_KEY || '';
const auth = key ? { Authorization: `Bearer ${key}` } : {};

// A deterministic generator (xorshift32) so a failure can be replayed.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
}

function assertJsonError(status, text, what) {
  assert.ok(status >= 400 && status < 500, `${what}: status ${status}: ${text.slice(0, 200)}`);
  let j;
  try {
    j = JSON.parse(text);
  } catch {
    assert.fail(`${what}: the ${status} body is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
  assert.equal(typeof j.error?.message, 'string', `${what}: ${text.slice(0, 200)}`);
  assert.equal(typeof j.error?.type, 'string', `${what}: ${text.slice(0, 200)}`);
  assert.ok('param' in j.error && 'code' in j.error, `${what}: ${text.slice(0, 200)}`);
}

async function post(path, body, headers = {}) {
  const res = await fetch(new URL(path, origin), {
    method: 'POST', body, headers: { 'Content-Type': 'application/json', ...auth, ...headers },
  });
  return { status: res.status, text: await res.text() };
}

// One raw HTTP exchange over TCP: writes `data` (write errors ignored: the server may close
// early) and returns what was read once one whole response has arrived (headers plus
// Content-Length bytes), the server closed, or `ms` passed. The socket is never half-closed:
// cpp-httplib drops the reply to a client that has shut down its sending side.
function raw(data, ms = 30_000) {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    let settled = false;
    const sock = net.connect(port, '127.0.0.1');
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(got.toString('latin1'));
    };
    const timer = setTimeout(finish, ms);
    sock.on('data', (c) => {
      got = Buffer.concat([got, c]);
      const text = got.toString('latin1');
      const cut = text.indexOf('\r\n\r\n');
      if (cut < 0) return;
      const len = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, cut));
      if (len && got.length >= cut + 4 + Number(len[1])) finish();
    });
    sock.on('error', () => {});
    sock.on('close', finish);
    sock.on('connect', () => {
      for (const d of Array.isArray(data) ? data : [data]) {
        if (sock.destroyed) break;
        sock.write(d);
      }
    });
  });
}

// The status and body of a raw HTTP/1.1 response ("" body when it has none).
function parseRaw(resp) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(resp);
  const cut = resp.indexOf('\r\n\r\n');
  return { status: m ? Number(m[1]) : 0, body: cut >= 0 ? resp.slice(cut + 4) : '' };
}

async function stillServing() {
  const h = await fetch(new URL('/health', origin));
  assert.equal(h.status, 200);
  const r = await post('/v1/chat/completions', JSON.stringify({
    messages: [{ role: 'user', content: 'still there?' }], max_tokens: 4, seed: 1,
  }));
  assert.equal(r.status, 200, r.text);
  assert.equal(JSON.parse(r.text).object, 'chat.completion');
}

test('malformed JSON, wrong types, invalid UTF-8 and unknown roles get 400 + JSON', async () => {
  const chat = '/v1/chat/completions';
  const cases = [
    ['malformed JSON', '{"messages": [{"role": "user", "content": "x"}'],
    ['not an object', '[1, 2, 3]'],
    ['empty body', ''],
    ['messages is an object', '{"messages": {"role": "user", "content": "x"}}'],
    ['content is a number', '{"messages": [{"role": "user", "content": 12}]}'],
    ['temperature is a string', '{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}'],
    ['max_tokens is negative', '{"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}'],
    ['stream is a string', '{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}'],
    ['tools is a string', '{"messages": [{"role": "user", "content": "x"}], "tools": "all"}'],
    ['unknown role', '{"messages": [{"role": "wizard", "content": "x"}]}'],
    ['lone surrogate escape', '{"messages": [{"role": "user", "content": "\\udc00"}]}'],
    ['deep nesting', '['.repeat(100_000)],
    ['NUL bytes', '\0\0\0\0'],
  ];
  for (const [what, body] of cases) {
    const r = await post(chat, body);
    assertJsonError(r.status, r.text, what);
    assert.equal(r.status, 400, what);
  }
  // Invalid UTF-8 in a string (0xC3 0x28) and overlong encodings, as raw bytes.
  for (const bytes of [[0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff]]) {
    const body = Buffer.concat([
      Buffer.from('{"messages": [{"role": "user", "content": "a'), Buffer.from(bytes), Buffer.from('b"}]}'),
    ]);
    const r = await post(chat, body);
    assertJsonError(r.status, r.text, `invalid UTF-8 ${bytes}`);
    assert.equal(r.status, 400);
  }
  const c = await post('/v1/completions', '{"prompt": [1, 2, 99999999]}');
  assertJsonError(c.status, c.text, 'token id outside the vocabulary');
  await stillServing();
});

test('a 100 MB body gets 413 + JSON, with Content-Length and chunked', async () => {
  const mb = Buffer.alloc(1 << 20, 0x61);
  const head = (extra) => `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
    `Content-Type: application/json\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}${extra}\r\n`;
  const sized = parseRaw(await raw([head(`Content-Length: ${100 << 20}\r\n`), ...Array(100).fill(mb)]));
  assertJsonError(sized.status, sized.body, '100 MB with Content-Length');
  assert.equal(sized.status, 413);
  const chunk = Buffer.concat([Buffer.from(`${(1 << 20).toString(16)}\r\n`), mb, Buffer.from('\r\n')]);
  const chunked = parseRaw(await raw([head('Transfer-Encoding: chunked\r\n'), ...Array(100).fill(chunk), '0\r\n\r\n']));
  assertJsonError(chunked.status, chunked.body, '100 MB chunked');
  assert.equal(chunked.status, 413);
  await stillServing();
});

test('1000 requests of random garbage all get 4xx + JSON; the server keeps serving', async () => {
  const next = rng(20260401);
  const bytes = (n) => Buffer.from(Array.from({ length: n }, () => next() & 0xff));
  const valid = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream: true });
  const paths = ['/v1/chat/completions', '/v1/completions'];
  let answered = 0;
  let ok200 = 0;
  const one = async (i) => {
    const kind = next() % 4;
    if (kind === 3) {  // not even HTTP
      const resp = await raw(Buffer.concat([bytes(1 + (next() % 300)), Buffer.from('\r\n\r\n')]), 10_000);
      if (resp === '') return;  // closing a connection it cannot parse is fine
      const { status, body } = parseRaw(resp);
      assertJsonError(status, body, `raw garbage #${i}`);
      answered++;
      return;
    }
    let body;
    if (kind === 0) {
      body = bytes(next() % 2000);
    } else if (kind === 1) {  // a valid body with a few bytes flipped
      body = Buffer.from(valid);
      for (let k = 0; k < 1 + (next() % 4); k++) body[next() % body.length] = next() & 0xff;
    } else {  // a valid body cut short
      body = Buffer.from(valid.slice(0, next() % (valid.length - 1)));
    }
    const r = await post(paths[next() % 2], body);
    if (r.status === 200) {
      // A flip inside a string can leave a valid request: that one is answered normally.
      assert.equal(kind, 1, `garbage #${i} was accepted: ${body}`);
      ok200++;
      return;
    }
    assertJsonError(r.status, r.text, `garbage #${i}`);
    answered++;
  };
  // 8 at a time.
  let i = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (i < 1000) await one(i++);
  }));
  assert.ok(answered > 900, `only ${answered} of 1000 answered with a JSON error (${ok200} were valid)`);
  await stillServing();
});

// Slow clients: 40 connections that send part of their headers and stall, and 20 that send a
// body one byte every 400 ms (never silent for the read timeout, so they stay), while a
// streamed generation runs. /health must answer in under 1 s throughout (9 s: longer than the
// 5 s read timeout that ends the stalled ones, plus the 2 s keep-alive wait after their 400),
// the generation must finish, and the stalled connections must have been closed by the server.
// Under ctest the budget is 2 s, 3 s under the sanitizers (GEMLET_TIME_SCALE): a /health starved
// by the stalled clients would wait for their 5 s read timeout, so that still tells starvation
// from noise.
test('stalled connections and slow bodies: /health answers in < 1 s throughout', async () => {
  const sockets = [];
  const closed = [];
  const open = () => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', () => {});
    sockets.push(s);
  });
  for (let i = 0; i < 40; ++i) {
    const s = await open();
    const at = Date.now();
    s.on('close', () => closed.push(Date.now() - at));
    s.resume();  // read (and drop) what comes, so that the server's close is seen
    s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n');
  }
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'slow' }], max_tokens: 2 });
  const tricklers = [];
  for (let i = 0; i < 20; ++i) {
    const s = await open();
    s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${
      key ? `Authorization: Bearer ${key}\r\n` : ''}Content-Length: ${body.length}\r\n\r\n`);
    s.resume();
    let sent = 0;
    tricklers.push(setInterval(() => { if (sent < body.length && !s.destroyed) s.write(body[sent++]); }, 400));
  }
  // A generation streaming meanwhile.
  const stream = fetch(new URL('/v1/chat/completions', origin), {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...auth },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'keep going' }], max_tokens: 64,
                           stream: true, ignore_eos: true }),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));
  try {
    const worst = [];
    const budget = 1000 * timeScale;
    const until = Date.now() + 9000;
    while (Date.now() < until) {
      const t0 = performance.now();
      const h = await fetch(new URL('/health', origin), { signal: AbortSignal.timeout(budget) });
      assert.equal(h.status, 200);
      await h.text();
      worst.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 200));
    }
    const max = Math.max(...worst);
    assert.ok(max < budget, `the slowest /health took ${max.toFixed(0)} ms (budget ${budget} ms)`);
    assert.ok(worst.length >= 20 / timeScale, `only ${worst.length} /health answers in 9 s`);
    const s = await stream;
    assert.equal(s.status, 200);
    assert.match(s.text, /"finish_reason":"length"/);
    assert.match(s.text, /data: \[DONE\]/);
    // The header stalls were closed by the server (its read timeout), not by us.
    assert.ok(closed.length >= 40, `${closed.length} of 40 stalled connections were closed`);
    assert.ok(Math.max(...closed) < 9500, `a stalled connection lived ${Math.max(...closed)} ms`);
  } finally {
    tricklers.forEach(clearInterval);
    sockets.forEach((s) => s.destroy());
  }
  await stillServing();
});
