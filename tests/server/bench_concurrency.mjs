// Aggregate decode throughput of a running `gemlet serve` with 1, 2, 4, ... concurrent streams
// (a measurement to report, not a test).
//   node bench_concurrency.mjs --url http://127.0.0.1:8080 [--key KEY] [--streams 1,4] [--tokens 32]
// For each stream count it sends that many streaming chat requests at once (ignore_eos, so each
// generates exactly --tokens tokens) and prints
//   decode tok/s  server-side: Δgemlet_decode_tokens_total / Δgemlet_decode_seconds_total
//                 (batched decode steps only, prefill excluded)
//   wall tok/s    client-side: all generated tokens / time from the first request to the last
//                 byte (prefill included)
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const url = args.url || 'http://127.0.0.1:8080';
const key = args.key || process.env.GEMLET_API_KEY || '';
const counts = (args.streams || '1,4').split(',').map(Number);
const tokens = Number(args.tokens || 32);
const headers = { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) };

async function metrics() {
  const body = await (await fetch(`${url}/metrics`)).text();
  const get = (name) => Number(body.split('\n').find((l) => l.startsWith(name + ' ')).split(' ')[1]);
  return { tokens: get('gemlet_decode_tokens_total'), seconds: get('gemlet_decode_seconds_total'),
           steps: get('gemlet_decode_steps_total') };
}

async function stream(i) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers,
    body: JSON.stringify({
      messages: [{ role: 'user', content: `Benchmark stream ${i}: write a long story.` }],
      max_tokens: tokens, seed: 100 + i, ignore_eos: true, stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let usage = null;
  let buf = '';
  const dec = new TextDecoder();
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    for (let cut; (cut = buf.indexOf('\n\n')) >= 0; buf = buf.slice(cut + 2)) {
      const line = buf.slice(0, cut);
      if (line.startsWith('data: {')) {
        const j = JSON.parse(line.slice(6));
        if (j.usage) usage = j.usage;
      }
    }
  }
  return usage.completion_tokens;
}

const rows = [];
for (const n of counts) {
  const m0 = await metrics();
  const t0 = performance.now();
  const done = await Promise.all([...Array(n).keys()].map(stream));
  const wall = (performance.now() - t0) / 1000;
  const m1 = await metrics();
  const generated = done.reduce((a, b) => a + b, 0);
  const decode = (m1.tokens - m0.tokens) / (m1.seconds - m0.seconds);
  rows.push({ streams: n, generated, steps: m1.steps - m0.steps, decode, wall: generated / wall });
  console.log(`${n} stream(s): ${generated} tokens, ${m1.steps - m0.steps} decode steps, ` +
              `decode ${decode.toFixed(2)} tok/s, wall ${(generated / wall).toFixed(2)} tok/s`);
}
const base = rows[0];
for (const r of rows.slice(1)) {
  console.log(`${r.streams} vs ${base.streams}: decode ×${(r.decode / base.decode).toFixed(2)}, ` +
              `wall ×${(r.wall / base.wall).toFixed(2)}`);
}
