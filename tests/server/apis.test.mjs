// Ollama's and Anthropic's official JavaScript clients (npm `ollama`, `@anthropic-ai/sdk`)
// and the OpenAI client's logprobs and n against `gemlet serve` on the tiny random model
// (run.sh starts it and sets GEMLET_BASE_URL / GEMLET_API_KEY). Random weights: the tests
// check the protocols, determinism and the constraints, not the meaning of the text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.GEMLET_BASE_URL;  // http://127.0.0.1:PORT/v1
const apiKey = process.env.GEMLET_API_KEY || 'unused';
assert.ok(baseURL, 'GEMLET_BASE_URL is not set (run tests/server/run.sh)');
const root = baseURL.replace(/\/v1$/, '');
const openai = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });
const ollama = new Ollama({ host: root, headers: { Authorization: `Bearer ${apiKey}` } });
const anthropic = new Anthropic({ baseURL: root, apiKey, maxRetries: 0, timeout: 120_000 });
// The server with the real Gemma 4 vocabulary, for structured output (format).
const vocabRoot = (process.env.GEMLET_STRUCTURED_URL || '').replace(/\/v1$/, '');
assert.ok(vocabRoot, 'GEMLET_STRUCTURED_URL is not set (run tests/server/run.sh)');
const ollamaVocab = new Ollama({ host: vocabRoot, headers: { Authorization: `Bearer ${apiKey}` } });

const weatherSchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

async function modelId() {
  return (await openai.models.list()).data[0].id;
}

// A stop string from the middle of `full` and the text that must come before it.
function stopFrom(full) {
  const chars = Array.from(full);
  assert.ok(chars.length >= 8, `reply too short for the test: ${JSON.stringify(full)}`);
  const start = Math.floor(chars.length / 2);
  const stop = chars.slice(start, start + 2).join('');
  return { stop, expected: full.slice(0, full.indexOf(stop)) };
}

test('openai: logprobs whose top entry is the emitted token; n: 3 gives three choices', async () => {
  const model = await modelId();
  const r = await openai.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 12, temperature: 0,
    logprobs: true, top_logprobs: 3,
  });
  const lp = r.choices[0].logprobs.content;
  assert.ok(lp.length >= 1 && lp.length <= r.usage.completion_tokens);
  for (const t of lp) {
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].token, t.token);  // greedy: the most likely token
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6);
    assert.ok(t.logprob <= 0 && t.top_logprobs[1].logprob <= t.top_logprobs[0].logprob);
    assert.deepEqual(t.bytes, Array.from(Buffer.from(t.token, 'utf8')));
  }
  const n = await openai.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, n: 3, seed: 11,
  });
  assert.equal(n.choices.length, 3);
  assert.deepEqual(n.choices.map((c) => c.index), [0, 1, 2]);
  assert.ok(new Set(n.choices.map((c) => c.message.content)).size > 1, 'three choices, one text');
  const c = await openai.completions.create({ model, prompt: 'Once', max_tokens: 4, temperature: 0, logprobs: 2 });
  assert.equal(c.choices[0].logprobs.tokens.length, c.choices[0].logprobs.token_logprobs.length);
});

test('ollama: chat whole and streamed give the same text with the same seed', async () => {
  const model = await modelId();
  const params = { model, messages: [{ role: 'user', content: 'Tell me a story.' }],
                   options: { seed: 7, temperature: 0.9, num_predict: 24 }, keep_alive: '5m' };
  const whole = await ollama.chat({ ...params, stream: false });
  assert.equal(whole.message.role, 'assistant');
  assert.equal(typeof whole.message.content, 'string');
  assert.equal(whole.done, true);
  assert.ok(whole.eval_count >= 1 && whole.eval_count <= 24);
  const again = await ollama.chat({ ...params, stream: false });
  assert.equal(again.message.content, whole.message.content);
  let text = '';
  let last = null;
  for await (const part of await ollama.chat({ ...params, stream: true })) {
    text += part.message.content;
    last = part;
  }
  assert.equal(text, whole.message.content);
  assert.equal(last.done, true);
  assert.equal(last.done_reason, whole.done_reason);
  const gen = await ollama.generate({ model, prompt: 'Once', options: { seed: 7, num_predict: 8 }, stream: false });
  assert.equal(typeof gen.response, 'string');
  assert.equal(gen.done, true);
  const tags = await ollama.list();
  assert.equal(tags.models[0].name, model);
  const show = await ollama.show({ model });
  assert.ok(show.capabilities.includes('tools'));
  assert.equal(typeof (await ollama.version()).version, 'string');
  assert.equal((await ollama.ps()).models.length, 1);
});

test('ollama: stop sequences, format json, a tool round trip', async () => {
  const model = await modelId();
  const params = { model, messages: [{ role: 'user', content: 'Count for me.' }], stream: false,
                   options: { seed: 3, temperature: 1.0, num_predict: 48 } };
  const full = (await ollama.chat(params)).message.content;
  const { stop, expected } = stopFrom(full);
  const r = await ollama.chat({ ...params, options: { ...params.options, stop: [stop] } });
  assert.equal(r.message.content, expected);
  const vmodel = (await ollamaVocab.list()).models[0].name;
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  for (const format of ['json', schema]) {
    const j = await ollamaVocab.chat({ model: vmodel, messages: params.messages, format, stream: false,
                                       options: { seed: 3, num_predict: 64 } });
    const doc = JSON.parse(j.message.content);
    if (format === schema) assert.ok(Number.isInteger(doc.n), j.message.content);
  }

  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: weatherSchema } }];
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  // tool_choice (an extension) forces the call the random model would not make.
  const call = await ollama.chat({ model, messages, tools, tool_choice: 'required', stream: false,
                                   options: { seed: 5, num_predict: 64 } });
  assert.equal(call.message.tool_calls.length, 1);
  const fn = call.message.tool_calls[0].function;
  assert.equal(fn.name, 'get_weather');
  assert.equal(typeof fn.arguments.city, 'string');  // Ollama's arguments are an object
  const reply = await ollama.chat({
    model, tools, stream: false, options: { seed: 5, num_predict: 8 },
    messages: [...messages, call.message, { role: 'tool', content: 'sunny', tool_name: 'get_weather' }],
  });
  assert.equal(typeof reply.message.content, 'string');
  assert.equal(reply.done, true);
});

test('anthropic: messages whole and streamed, same seed same text, thinking accepted', async () => {
  const model = await modelId();
  const params = { model, max_tokens: 24, system: 'Be brief.', temperature: 0.9,
                   messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' },
                              { role: 'user', content: 'Tell me a story.' }] };
  // No seed in Anthropic's API: with temperature 0 the text is the greedy one, the same each time.
  const greedy = { ...params, temperature: 0 };
  const a = await anthropic.messages.create(greedy);
  const b = await anthropic.messages.create(greedy);
  assert.equal(a.type, 'message');
  assert.equal(a.role, 'assistant');
  assert.ok(['end_turn', 'max_tokens'].includes(a.stop_reason));
  assert.ok(a.usage.input_tokens > 0 && a.usage.output_tokens >= 1);
  assert.deepEqual(b.content, a.content);
  const stream = anthropic.messages.stream(greedy);
  const events = [];
  for await (const ev of stream) events.push(ev.type);
  const final = await stream.finalMessage();
  assert.deepEqual(final.content, a.content);
  assert.equal(final.stop_reason, a.stop_reason);
  assert.equal(events[0], 'message_start');
  assert.equal(events[events.length - 1], 'message_stop');
  assert.ok(events.includes('message_delta'));
  const thought = await anthropic.messages.create({ ...params, thinking: { type: 'enabled', budget_tokens: 1024 } });
  for (const block of thought.content) assert.ok(['thinking', 'text'].includes(block.type), block.type);
});

test('anthropic: stop sequences and a tool round trip', async () => {
  const model = await modelId();
  const params = { model, max_tokens: 48, temperature: 0, messages: [{ role: 'user', content: 'Count for me.' }] };
  const full = (await anthropic.messages.create(params)).content.map((b) => b.text).join('');
  const { stop, expected } = stopFrom(full);
  const r = await anthropic.messages.create({ ...params, stop_sequences: [stop, 'never-appears-xyz'] });
  assert.equal(r.stop_reason, 'stop_sequence');
  assert.equal(r.stop_sequence, stop);
  assert.equal(r.content.map((b) => b.text).join(''), expected);

  const tools = [{ name: 'get_weather', description: 'Weather in a city', input_schema: weatherSchema }];
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  const call = await anthropic.messages.create({ model, max_tokens: 64, tools, messages,
                                                tool_choice: { type: 'tool', name: 'get_weather' } });
  assert.equal(call.stop_reason, 'tool_use');
  const use = call.content.find((b) => b.type === 'tool_use');
  assert.ok(use, JSON.stringify(call.content));
  assert.equal(use.name, 'get_weather');
  assert.equal(typeof use.input.city, 'string');
  const reply = await anthropic.messages.create({
    model, max_tokens: 8, tools,
    messages: [...messages, { role: 'assistant', content: call.content },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
  });
  assert.equal(reply.type, 'message');
  // Streamed, the call arrives as a tool_use block with its input as JSON deltas.
  const stream = anthropic.messages.stream({ model, max_tokens: 64, tools, messages,
                                             tool_choice: { type: 'tool', name: 'get_weather' } });
  const final = await stream.finalMessage();
  const streamedUse = final.content.find((b) => b.type === 'tool_use');
  assert.ok(streamedUse);
  assert.equal(typeof streamedUse.input.city, 'string');
});
