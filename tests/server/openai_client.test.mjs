// The official OpenAI Node client against `gemlet serve` on the tiny random model (run.sh
// starts the server and sets GEMLET_BASE_URL / GEMLET_API_KEY). The weights are random, so the
// tests check the protocol and determinism, not the meaning of the text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.GEMLET_BASE_URL;  // http://127.0.0.1:PORT/v1
const apiKey = process.env.GEMLET_API_KEY || 'unused';
assert.ok(baseURL, 'GEMLET_BASE_URL is not set (run tests/server/run.sh)');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });

async function modelId() {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  return list.data[0].id;
}

function user(text) {
  return [{ role: 'user', content: text }];
}

async function streamText(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let text = '';
  let finish = null;
  let usage = null;
  let roleSeen = false;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.role) roleSeen = true;
    if (choice.delta.content) text += choice.delta.content;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { text, finish, usage, roleSeen };
}

async function metric(name) {
  const res = await fetch(new URL('/metrics', baseURL));
  const body = await res.text();
  const line = body.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

test('non-streaming chat', async () => {
  const model = await modelId();
  const r = await client.chat.completions.create({
    model, messages: user('Hello, who are you?'), max_tokens: 16, seed: 1,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 16);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('streaming chat gives the same text as non-streaming with the same seed', async () => {
  const model = await modelId();
  const params = { model, messages: user('Tell me a story.'), max_tokens: 24, seed: 7, temperature: 0.9 };
  const whole = await client.chat.completions.create(params);
  const streamed = await streamText({ ...params, stream_options: { include_usage: true } });
  assert.ok(streamed.roleSeen, 'the first chunk carries the role');
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  assert.ok(streamed.usage, 'usage arrives in the last chunk');
  assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
});

test('the same seed gives the same text; other seeds differ', async () => {
  const model = await modelId();
  const ask = (seed) => client.chat.completions.create({
    model, messages: user('Write a poem.'), max_tokens: 32, seed, temperature: 1.0,
  }).then((r) => r.choices[0].message.content);
  const a = await ask(42);
  const b = await ask(42);
  assert.equal(a, b);
  const others = await Promise.all([ask(1), ask(2), ask(3)]);
  assert.ok(others.some((t) => t !== a), 'three other seeds all gave the same text');
});

test('stop sequences end the reply before the stop string', async () => {
  const model = await modelId();
  const params = { model, messages: user('Count for me.'), max_tokens: 48, seed: 3, temperature: 1.0 };
  const full = (await client.chat.completions.create(params)).choices[0].message.content;
  // A stop string taken from the middle of the reply: the reply must end just before it.
  const chars = Array.from(full);
  assert.ok(chars.length >= 8, `reply too short for the test: ${JSON.stringify(full)}`);
  const start = Math.floor(chars.length / 2);
  const stop = chars.slice(start, start + 2).join('');
  const expected = full.slice(0, full.indexOf(stop));
  const r = await client.chat.completions.create({ ...params, stop: [stop, 'never-appears-xyz'] });
  assert.equal(r.choices[0].message.content, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await streamText({ ...params, stop });
  assert.equal(s.text, expected);
  assert.equal(s.finish, 'stop');
});

test('tool call round trip', async () => {
  const model = await modelId();
  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  }];
  const messages = user('What is the weather in Paris?');
  const forced = { tool_choice: { type: 'function', function: { name: 'get_weather' } } };
  // The random model calls tools only when told to: tool_choice makes the grammar allow only a
  // call to get_weather with arguments valid against its parameters (structured output), and
  // the token budget steers the call to close in time: finish_reason 'tool_calls'.
  const r = await client.chat.completions.create({ model, messages, tools, max_tokens: 64, seed: 5, ...forced });
  const msg = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.match(call.id, /^call_/);
  const args = JSON.parse(call.function.arguments);
  assert.deepEqual(Object.keys(args), ['city']);
  assert.equal(typeof args.city, 'string');

  // A budget too small for any whole call: finish_reason 'length', and the call cut off is
  // still reported, as OpenAI reports truncated calls.
  const cut = await client.chat.completions.create({ model, messages, tools, max_tokens: 8, seed: 5, ...forced });
  assert.equal(cut.choices[0].finish_reason, 'length');
  assert.equal(cut.usage.completion_tokens, 8);

  // Streaming: the same call arrives as a tool_calls delta.
  const stream = await client.chat.completions.create({
    model, messages, tools, max_tokens: 64, seed: 5, stream: true, ...forced,
  });
  const deltas = [];
  for await (const chunk of stream) {
    for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) deltas.push(tc);
  }
  assert.equal(deltas.length, 1);
  assert.equal(deltas[0].function.name, 'get_weather');
  assert.equal(deltas[0].function.arguments, call.function.arguments);

  // Send the result back: the conversation continues with an ordinary answer.
  const r2 = await client.chat.completions.create({
    model, tools, max_tokens: 12, seed: 5,
    messages: [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ city: 'Paris', temp_c: 21 }) },
    ],
  });
  assert.equal(r2.choices[0].message.role, 'assistant');
  assert.ok(r2.usage.prompt_tokens > r.usage.prompt_tokens);
});

test('8 concurrent streams each get exactly what they get alone', async () => {
  const model = await modelId();
  const params = (i) => ({
    model, messages: user(`Story number ${i}, please.`), max_tokens: 40, seed: 1000 + i, temperature: 1.0,
  });
  const solo = [];
  for (let i = 0; i < 8; i++) solo.push((await streamText(params(i))).text);
  const steps0 = await metric('gemlet_decode_steps_total');
  const tokens0 = await metric('gemlet_decode_tokens_total');
  const together = await Promise.all([...Array(8).keys()].map((i) => streamText(params(i))));
  for (let i = 0; i < 8; i++) assert.equal(together[i].text, solo[i], `stream ${i} differs`);
  const steps = (await metric('gemlet_decode_steps_total')) - steps0;
  const tokens = (await metric('gemlet_decode_tokens_total')) - tokens0;
  // Batched: several streams share each decode step (alone, each step would carry one token).
  // Not more: on a loaded machine the 8 requests arrive spread out (once 312 tokens in 156 steps).
  assert.ok(tokens / steps >= 1.5, `only ${tokens} tokens in ${steps} steps`);
});

test('errors come in the OpenAI shape', async () => {
  const model = await modelId();
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: 'wizard', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'messages[0].role',
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: user('x'), temperature: 'hot' }),
    (e) => e.status === 400 && e.param === 'temperature',
  );
  if (process.env.GEMLET_API_KEY) {
    const wrong = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  }
});

test('prefix cache: a shared system prompt and a continued conversation are not prefilled again', async () => {
  const model = await modelId();
  const system = { role: 'system', content: 'You are a terse assistant who answers in one line. '.repeat(4) };
  const hits0 = await metric('gemlet_prefix_cache_hits_total');
  const first = await client.chat.completions.create({
    model, messages: [system, { role: 'user', content: 'First question?' }], max_tokens: 8, seed: 11,
  });
  const other = await client.chat.completions.create({
    model, messages: [system, { role: 'user', content: 'A different question!' }], max_tokens: 8, seed: 12,
  });
  // The second conversation reuses the system turn (at least the system text's tokens).
  assert.ok(other.usage.prompt_tokens_details.cached_tokens >= 20,
            JSON.stringify(other.usage));
  // Continuing the first conversation reuses at least as much.
  const next = await client.chat.completions.create({
    model, max_tokens: 8, seed: 13,
    messages: [system, { role: 'user', content: 'First question?' },
               { role: 'assistant', content: first.choices[0].message.content },
               { role: 'user', content: 'And then?' }],
  });
  assert.ok(next.usage.prompt_tokens_details.cached_tokens >= other.usage.prompt_tokens_details.cached_tokens);
  assert.ok((await metric('gemlet_prefix_cache_hits_total')) >= hits0 + 2);
});

test('text completions: raw prompt, streaming, max_completion_tokens and penalties', async () => {
  const model = await modelId();
  const params = { model, prompt: 'Once upon a time', max_tokens: 12, seed: 21, temperature: 1.0 };
  const r = await client.completions.create(params);
  assert.equal(r.object, 'text_completion');
  assert.equal(typeof r.choices[0].text, 'string');
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    text += chunk.choices[0]?.text ?? '';
  }
  assert.equal(text, r.choices[0].text);
  assert.equal(usage.completion_tokens, r.usage.completion_tokens);

  // max_completion_tokens bounds a chat reply like max_tokens; penalties are accepted.
  const c = await client.chat.completions.create({
    model, messages: user('Go on and on.'), max_completion_tokens: 5, seed: 4, ignore_eos: true,
    presence_penalty: 1.5, frequency_penalty: 1.0,
  });
  assert.equal(c.usage.completion_tokens, 5);
  assert.equal(c.choices[0].finish_reason, 'length');
});

test('thinking on/off is a request field that reaches the chat template', async () => {
  const model = await modelId();
  const ask = (extra) => client.chat.completions.create({
    model, messages: user('Think about it.'), max_tokens: 4, seed: 8, ...extra,
  });
  const off = await ask({ reasoning_effort: 'none' });
  const on = await ask({ reasoning_effort: 'high' });
  const kwargs = await ask({ chat_template_kwargs: { enable_thinking: true } });
  // Thinking on adds the <|think|> system turn to the prompt.
  assert.ok(on.usage.prompt_tokens > off.usage.prompt_tokens, `${on.usage.prompt_tokens} vs ${off.usage.prompt_tokens}`);
  assert.equal(kwargs.usage.prompt_tokens, on.usage.prompt_tokens);
  // Thinking off: no reasoning field at all (not null, not ""), and the reply is content.
  assert.equal('reasoning_content' in off.choices[0].message, false, JSON.stringify(off.choices[0].message));
  assert.equal(typeof off.choices[0].message.content, 'string');
  // Thinking on: a reasoning field only when there is reasoning (a non-empty string), and the
  // stream's reasoning and content deltas add up to the same two texts as the plain reply.
  for (const [r, extra] of [[on, { reasoning_effort: 'high' }], [kwargs, { chat_template_kwargs: { enable_thinking: true } }]]) {
    const m = r.choices[0].message;
    if ('reasoning_content' in m) {
      assert.equal(typeof m.reasoning_content, 'string', JSON.stringify(m));
      assert.ok(m.reasoning_content.length > 0, JSON.stringify(m));
    }
    const stream = await client.chat.completions.create({
      model, messages: user('Think about it.'), max_tokens: 4, seed: 8, stream: true, ...extra,
    });
    let reasoning = '', content = '';
    for await (const chunk of stream) {
      reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
      content += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.equal(reasoning, m.reasoning_content ?? '');
    assert.equal(content, m.content ?? '');
  }
});
