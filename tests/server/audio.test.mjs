// Audio input through `gemlet serve` on the tiny audio oracle (../shared/oracle/tiny-e2b-audio,
// converted by run.sh) with the official OpenAI client: a chat turn with an input_audio part
// streams an answer; audio.transcriptions.create returns text, json, verbose_json, srt and vtt;
// a 5-minute file (the oracle's clips and silence, made here) is transcribed window by window;
// translations answer too; bad audio (a truncated WAV, a header lying about its size, 0
// samples, random bytes, an unsupported codec, a 10-hour declared length) is a 400 naming the
// file or the part, and the server keeps serving. Random weights: the tests check the
// protocol, the windowing and determinism, not the words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';

const baseURL = process.env.GEMLET_AUDIO_URL;  // http://127.0.0.1:PORT/v1
const apiKey = process.env.GEMLET_API_KEY || 'unused';
const shared = process.env.GEMLET_SHARED_DIR;
assert.ok(baseURL, 'GEMLET_AUDIO_URL is not set (run tests/server/run.sh)');
assert.ok(shared, 'GEMLET_SHARED_DIR is not set (run tests/server/run.sh)');
const dir = path.join(shared, 'oracle', 'tiny-e2b-audio');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 600_000 });

// Random weights never end a turn: cap each window's answer at this many tokens per second
// of its audio (the server's max_tokens_per_second extension field).
const kPerSecond = 2;

function clip(name) { return fs.readFileSync(path.join(dir, name)); }

// The PCM16 samples of a WAV (the oracle's clips are PCM16).
function samplesOf(wav) {
  let at = 12;
  while (at + 8 <= wav.length) {
    const id = wav.toString('ascii', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'data') return new Int16Array(wav.buffer.slice(wav.byteOffset + at + 8, wav.byteOffset + at + 8 + size));
    at += 8 + size + (size & 1);
  }
  throw new Error('no data chunk');
}

// A WAV: PCM16 `samples` (an Int16Array), or with `declared` data bytes in the header and
// codec `tag`.
function wav(samples, { rate = 16000, channels = 1, declared, tag = 1 } = {}) {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const h = Buffer.alloc(44);
  const n = declared ?? data.length;
  h.write('RIFF', 0); h.writeUInt32LE((36 + n) >>> 0, 4); h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(tag, 20); h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24); h.writeUInt32LE(rate * channels * 2, 28); h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34); h.write('data', 36); h.writeUInt32LE(n >>> 0, 40);
  return Buffer.concat([h, data]);
}

// 5 minutes at 16 kHz: the oracle's three mono clips in turn, each followed by 0.5-3 s of
// silence, until 300 s.
function fiveMinutes() {
  const clips = ['sweep.wav', 'bursts.wav', 'click.wav'].map((n) => samplesOf(clip(n)));
  const out = new Int16Array(300 * 16000);
  let at = 0;
  for (let i = 0; at < out.length; ++i) {
    const c = clips[i % 3];
    out.set(c.subarray(0, Math.min(c.length, out.length - at)), at);
    at += c.length + 8000 * (1 + (i % 6));
  }
  return wav(out);
}

async function transcribe(bytes, response_format, extra = {}) {
  return client.audio.transcriptions.create({
    file: await toFile(bytes, 'speech.wav', { type: 'audio/wav' }), model: 'tiny-audio', response_format,
    max_tokens_per_second: kPerSecond, ...extra,
  });
}

async function metric(name) {
  const body = await (await fetch(new URL('/metrics', baseURL))).text();
  const line = body.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

function audioTurn(bytes, text = 'What is this sound?') {
  return [{ role: 'user', content: [
    { type: 'input_audio', input_audio: { data: Buffer.from(bytes).toString('base64'), format: 'wav' } },
    { type: 'text', text }] }];
}

test('a chat turn with an input_audio part streams an answer (official openai client)', async () => {
  const stream = await client.chat.completions.create({
    model: 'tiny-audio', messages: audioTurn(clip('sweep.wav')), max_tokens: 12, temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'length');
  assert.ok(text.length > 0, 'no streamed text');
  // sweep.wav is 1.5 s: 38 soft tokens (25 per second) between <|audio> and <audio|>.
  assert.ok(usage.prompt_tokens > 40, `prompt_tokens ${usage.prompt_tokens}`);
  assert.equal(usage.completion_tokens, 12);
  // The same turn again, whole: the same greedy text, and the clip is not encoded again.
  const encodes = await metric('gemlet_audio_encodes_total');
  const whole = await client.chat.completions.create({
    model: 'tiny-audio', messages: audioTurn(clip('sweep.wav')), max_tokens: 12, temperature: 0, ignore_eos: true,
  });
  assert.equal(whole.choices[0].message.content, text);
  assert.equal(await metric('gemlet_audio_encodes_total'), encodes);
  // Another clip is another prompt.
  const other = await client.chat.completions.create({
    model: 'tiny-audio', messages: audioTurn(clip('bursts.wav')), max_tokens: 12, temperature: 0, ignore_eos: true,
  });
  assert.ok(other.usage.prompt_tokens > whole.usage.prompt_tokens, 'bursts.wav is longer than sweep.wav');
  assert.equal(await metric('gemlet_audio_encodes_total'), encodes + 1);
});

test('transcriptions: text, json, verbose_json, srt and vtt of one clip agree', async () => {
  const bytes = clip('bursts.wav');  // 2.7 s
  const json = await transcribe(bytes, 'json');
  assert.equal(typeof json.text, 'string');
  assert.ok(json.text.length > 0, 'empty transcript');
  const text = await transcribe(bytes, 'text');
  assert.equal(typeof text, 'string');
  assert.equal(text.trim(), json.text);
  const verbose = await transcribe(bytes, 'verbose_json', { language: 'en' });
  assert.equal(verbose.task, 'transcribe');
  assert.equal(verbose.language, 'en');
  assert.ok(Math.abs(verbose.duration - 43211 / 16000) < 1e-3, `duration ${verbose.duration}`);
  assert.equal(verbose.segments.length, 1);
  const s = verbose.segments[0];
  assert.equal(s.start, 0);
  assert.ok(Math.abs(s.end - verbose.duration) < 1e-3);
  assert.ok(Array.isArray(s.tokens) && s.tokens.length >= 1 && s.tokens.length <= Math.ceil(kPerSecond * 2.71));
  const srt = await transcribe(bytes, 'srt');
  assert.match(srt, /^1\n00:00:00,000 --> 00:00:02,70\d\n/);
  const vtt = await transcribe(bytes, 'vtt');
  assert.match(vtt, /^WEBVTT\n\n00:00:00\.000 --> 00:00:02\.70\d\n/);
  // Greedy by default: the same words every time, in every format.
  assert.ok(srt.includes(json.text) && vtt.includes(json.text), 'the formats hold the same text');
});

test('a 5-minute file is transcribed window by window (30 s at most, cut on quiet points)', async () => {
  const encodes = await metric('gemlet_audio_encodes_total');
  const r = await transcribe(fiveMinutes(), 'verbose_json');
  assert.ok(Math.abs(r.duration - 300) < 1e-6, `duration ${r.duration}`);
  assert.ok(r.segments.length >= 10 && r.segments.length <= 14, `${r.segments.length} windows`);
  let end = 0;
  for (const [i, s] of r.segments.entries()) {
    assert.equal(s.id, i);
    assert.ok(Math.abs(s.start - end) < 1e-6, `window ${i} starts at ${s.start}, the last ended at ${end}`);
    assert.ok(s.end - s.start <= 30 + 1e-6 && s.end > s.start, `window ${i}: ${s.start}-${s.end}`);
    assert.ok(s.tokens.length <= Math.ceil(kPerSecond * (s.end - s.start)), `window ${i}: ${s.tokens.length} tokens`);
    end = s.end;
  }
  assert.ok(Math.abs(end - 300) < 1e-6, `the windows end at ${end}`);
  assert.equal(r.text, r.segments.map((s) => s.text).filter((t) => t).join(' '));
  assert.equal(await metric('gemlet_audio_encodes_total'), encodes + r.segments.length);
});

test('translations answer in the same shapes', async () => {
  const r = await client.audio.translations.create({
    file: await toFile(clip('click.wav'), 'click.wav', { type: 'audio/wav' }), model: 'tiny-audio',
    response_format: 'verbose_json', max_tokens_per_second: kPerSecond,
  });
  assert.equal(r.task, 'translate');
  assert.equal(r.segments.length, 1);
  const text = await client.audio.translations.create({
    file: await toFile(clip('click.wav'), 'click.wav'), model: 'tiny-audio', response_format: 'text',
    max_tokens_per_second: kPerSecond,
  });
  assert.equal(text.trim(), r.text);
});

test('the 44.1 kHz stereo clip is resampled: as many soft tokens as its 16 kHz mono version', async () => {
  const a = await client.chat.completions.create({
    model: 'tiny-audio', messages: audioTurn(clip('stereo44k.wav')), max_tokens: 1, temperature: 0, ignore_eos: true,
  });
  const b = await client.chat.completions.create({
    model: 'tiny-audio', messages: audioTurn(clip('stereo44k-16k.wav')), max_tokens: 1, temperature: 0,
    ignore_eos: true,
  });
  assert.equal(a.usage.prompt_tokens, b.usage.prompt_tokens);
});

test('bad audio is a 400 naming the file or the part, and the server keeps serving', async () => {
  const tone = new Int16Array(1600).fill(100);
  const good = wav(tone);
  const random = Buffer.alloc(4096);
  for (let i = 0, x = 7; i < random.length; ++i) { x = (x * 1103515245 + 12345) >>> 0; random[i] = x >>> 24; }
  const bad = {
    'a truncated WAV': [good.subarray(0, good.length / 2), 'truncated WAV'],
    'a header lying about its size': [wav(tone, { declared: 3200 * 100 }), 'truncated WAV'],
    'a 0-sample file': [wav(new Int16Array(0)), '0 samples'],
    'random bytes': [random, 'not a readable audio file'],
    'an unsupported codec': [wav(tone, { tag: 0x1234 }), 'not a readable audio file'],
    'a 10-hour declared length': [wav(tone, { declared: 16000 * 2 * 36000 }), 'over the limit'],
  };
  for (const [what, [bytes, says]] of Object.entries(bad)) {
    await assert.rejects(transcribe(bytes, 'json'), (e) => {
      assert.equal(e.status, 400, `${what}: ${e.message}`);
      assert.ok(e.message.includes(says) && e.message.includes('speech.wav'), `${what}: ${e.message}`);
      assert.equal(e.error?.param, 'file', what);
      return true;
    }, what);
    await assert.rejects(client.chat.completions.create({ model: 'tiny-audio', messages: audioTurn(bytes), max_tokens: 2 }),
      (e) => {
        assert.equal(e.status, 400, `${what}: ${e.message}`);
        assert.ok(e.message.includes(says), `${what}: ${e.message}`);
        assert.equal(e.error?.param, 'messages[0].content[0].input_audio', what);
        return true;
      }, what);
  }
  // Not base64, an unknown format, no file at all.
  await assert.rejects(client.chat.completions.create({ model: 'tiny-audio', max_tokens: 2, messages: [{ role: 'user',
    content: [{ type: 'input_audio', input_audio: { data: '@@@@', format: 'wav' } }] }] }), (e) => e.status === 400);
  await assert.rejects(client.chat.completions.create({ model: 'tiny-audio', max_tokens: 2, messages: [{ role: 'user',
    content: [{ type: 'input_audio', input_audio: { data: good.toString('base64'), format: 'aac' } }] }] }),
  (e) => e.status === 400 && e.message.includes('format'));
  const form = new FormData();
  form.append('model', 'tiny-audio');
  const none = await fetch(new URL('audio/transcriptions', baseURL + '/'), {
    method: 'POST', body: form, headers: { Authorization: `Bearer ${apiKey}` } });
  assert.equal(none.status, 400);
  assert.match((await none.json()).error.message, /'file' is required/);
  // A file over the server's --max-upload (12,000,000 bytes: run.sh) is a 413.
  await assert.rejects(transcribe(wav(new Int16Array(6_100_000)), 'json'), (e) => {
    assert.equal(e.status, 413, e.message);
    assert.ok(e.message.includes('12000000'), e.message);
    return true;
  });
  // Still serving: a good clip transcribes.
  const ok = await transcribe(good, 'json');
  assert.equal(typeof ok.text, 'string');
});
