// Two gemlet replicas behind nginx (run.sh starts them): every request answers, prefix
// affinity holds (the same X-Session-Id, or the same first user message with different later
// turns, reaches the same replica), both replicas get work, and when one dies nginx sends its
// requests to the other.
import assert from 'node:assert/strict';
import { test } from 'node:test';

const base = process.env.GEMLET_LB_URL;
assert.ok(base, 'GEMLET_LB_URL must be set (run.sh)');

async function chat(messages, headers = {}) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'tiny', messages, max_tokens: 4, temperature: 0 }),
  });
  const body = await r.json();
  return { status: r.status, replica: r.headers.get('x-gemlet-replica'), body };
}

// Runs `jobs` (functions returning promises) with `width` at a time.
async function pool(jobs, width) {
  const out = new Array(jobs.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  }));
  return out;
}

const prefixes = Array.from({ length: 16 }, (_, i) => `Conversation ${i}: tell me about topic ${i * 7919}.`);

test('8 concurrent clients: all answered, the same first user message -> the same replica', async () => {
  const jobs = [];
  for (const p of prefixes) {
    for (const turn of ['first follow-up', 'second, longer follow-up question']) {
      jobs.push(() => chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: p },
                            { role: 'assistant', content: 'OK.' }, { role: 'user', content: turn }]));
    }
    jobs.push(() => chat([{ role: 'user', content: p }]));  // the first turn alone
  }
  const results = await pool(jobs, 8);
  for (const r of results) {
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.choices?.[0]?.message, JSON.stringify(r.body));
    assert.match(r.replica ?? '', /^r[12]$/);
  }
  const byPrefix = new Map();
  results.forEach((r, i) => {
    const p = prefixes[Math.floor(i / 3)];
    byPrefix.set(p, [...(byPrefix.get(p) ?? []), r.replica]);
  });
  for (const [p, replicas] of byPrefix) assert.equal(new Set(replicas).size, 1, `${p}: ${replicas}`);
  // 16 keys on a consistent hash ring of two: both replicas get some (all on one: p < 1e-4).
  assert.equal(new Set(results.map((r) => r.replica)).size, 2);
});

test('the X-Session-Id header chooses the replica whatever the messages', async () => {
  const jobs = [];
  for (let s = 0; s < 8; ++s) {
    for (let k = 0; k < 3; ++k) {
      jobs.push(() => chat([{ role: 'user', content: `unrelated message ${s}-${k}` }], { 'X-Session-Id': `session-${s}` }));
    }
  }
  const results = await pool(jobs, 8);
  for (let s = 0; s < 8; ++s) {
    const rs = results.slice(3 * s, 3 * s + 3);
    assert.ok(rs.every((r) => r.status === 200));
    assert.equal(new Set(rs.map((r) => r.replica)).size, 1, `session-${s}: ${rs.map((r) => r.replica)}`);
  }
});

test('a dead replica: its requests go to the other one (passive health check)', async () => {
  // Which replica each prefix lives on, then r2 dies (SIGKILL: a crash, its sockets reset).
  const before = await pool(prefixes.map((p) => () => chat([{ role: 'user', content: p }])), 8);
  const onR2 = prefixes.filter((_, i) => before[i].replica === 'r2');
  assert.ok(onR2.length > 0);
  process.kill(Number(process.env.GEMLET_R2_PID), 'SIGKILL');
  const deadline = Date.now() + 30000;
  for (;;) {  // until the kernel has closed r2's port
    const r = await chat([{ role: 'user', content: onR2[0] }]).catch((e) => ({ error: e }));
    if (r.status === 200 && r.replica === 'r1') break;
    assert.ok(Date.now() < deadline, `r2's requests did not move to r1 within 30 s: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 200));
  }
  const after = await pool(onR2.map((p) => () => chat([{ role: 'user', content: p }])), 8);
  for (const r of after) {
    assert.equal(r.status, 200);
    assert.equal(r.replica, 'r1');
  }
  const health = await fetch(`${base}/health`);
  assert.equal(health.status, 200);
  assert.equal(health.headers.get('x-gemlet-replica'), 'r1');
});
