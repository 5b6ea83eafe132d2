// Structured output through the official OpenAI client: response_format (json_schema,
// json_object), tool_choice required / named / auto, and GBNF grammars, against `gemlet serve`
// on the tiny random model WITH the real Gemma 4 vocabulary (run.sh starts it and sets
// GEMLET_STRUCTURED_URL; with GEMLET_STRUCTURED_VOCAB=tiny, as in the ASan stage, it is the
// 512-token demo model, whose byte tokens make every non-ASCII character several tokens). A random-weight model at temperature 1 tries every token: the
// grammar is the only reason its output parses. Every reply is checked by validators
// independent of gemlet's grammar code: ajv (JSON Schema draft 2020-12 + ajv-formats) for
// JSON, and parsers written here for the grammars in tests/data/grammars.
//   GEMLET_STRUCTURED_SEEDS  seeds per schema (default 50; CI's release stage uses 8)
//   GEMLET_STRUCTURED_LIMIT  test at most this many schemas and grammars (default all; the
//                            ASan stage, ~20x slower, uses 8 with one seed)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const addFormats = addFormatsModule.default ?? addFormatsModule;
const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = path.join(here, '..', 'data');
const baseURL = process.env.GEMLET_STRUCTURED_URL;
assert.ok(baseURL, 'GEMLET_STRUCTURED_URL is not set (run tests/server/run.sh)');
const apiKey = process.env.GEMLET_API_KEY || 'unused';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 300_000 });
const SEEDS = Number(process.env.GEMLET_STRUCTURED_SEEDS ?? 50);
const LIMIT = Number(process.env.GEMLET_STRUCTURED_LIMIT ?? 1e9);
const few = (n) => Math.max(1, Math.min(n, SEEDS));  // requests of the smaller tests
const CONCURRENCY = 8;  // the server's slots

function validator(schema) {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv);
  return ajv.compile(schema);
}

// Runs fn(i) for i in [0, n), CONCURRENCY at a time; returns the results in order.
async function pool(n, fn) {
  const out = new Array(n);
  let next = 0;
  async function worker() {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, worker));
  return out;
}

const schemas = fs.readdirSync(path.join(dataDir, 'schemas')).filter((f) => f.endsWith('.json')).sort()
  .map((f) => ({ name: path.basename(f, '.json'),
                 schema: JSON.parse(fs.readFileSync(path.join(dataDir, 'schemas', f), 'utf8')) }));

test('response_format json_schema: every reply parses and validates (ajv)', async () => {
  assert.ok(schemas.length >= 20, `only ${schemas.length} test schemas`);
  const tested = schemas.filter((_, k) => k % Math.ceil(schemas.length / Math.min(LIMIT, schemas.length)) === 0);
  let checked = 0;
  for (const { name, schema } of tested) {
    const validate = validator(schema);
    const replies = await pool(SEEDS, (i) => client.chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: `Reply with a ${name} record.` }],
      response_format: { type: 'json_schema', json_schema: { name: 'reply', schema, strict: true } },
      temperature: 1,
      max_tokens: 160,
      seed: 1000 + i,
      // Thinking on for every other seed: the thought is free, the answer after it is not.
      ...(i % 2 ? { reasoning_effort: 'high' } : {}),
    }));
    replies.forEach((r, i) => {
      const c = r.choices[0];
      const where = `${name} seed ${1000 + i}`;
      let value;
      assert.doesNotThrow(() => { value = JSON.parse(c.message.content); }, `${where}: not JSON: ${c.message.content}`);
      assert.ok(validate(value), `${where}: ${JSON.stringify(validate.errors)}: ${c.message.content}`);
      assert.equal(c.finish_reason, 'stop', where);
      checked++;
    });
  }
  assert.equal(checked, tested.length * SEEDS);
});

test('response_format json_schema streams a valid document', async () => {
  const schema = schemas.find((s) => s.name.includes('tool_arguments')).schema;
  const validate = validator(schema);
  const stream = await client.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'weather' }], stream: true, seed: 7, max_tokens: 120,
    response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
  });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (ch?.delta?.content) text += ch.delta.content;
    if (ch?.finish_reason) finish = ch.finish_reason;
  }
  assert.ok(validate(JSON.parse(text)), text);
  assert.equal(finish, 'stop');
});

test('response_format json_object gives a JSON object', async () => {
  const replies = await pool(few(Math.max(4, SEEDS / 5)), (i) => client.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'JSON please' }], max_tokens: 120, seed: 50 + i,
    response_format: { type: 'json_object' },
  }));
  for (const r of replies) {
    const v = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof v, 'object');
    assert.ok(v !== null && !Array.isArray(v));
  }
});

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a place',
    parameters: schemas.find((s) => s.name.includes('tool_arguments')).schema } },
  { type: 'function', function: { name: 'set_alarm', parameters: {
    type: 'object', properties: { time: { type: 'string', format: 'time' }, label: { type: 'string', maxLength: 20 },
      repeat: { type: 'array', items: { enum: ['mon', 'tue', 'wed'] }, maxItems: 3 }, loud: { type: 'boolean' } },
    required: ['time'], additionalProperties: false } } },
  { type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: {} } } },
];
const toolValidators = Object.fromEntries(tools.map((t) => [t.function.name, validator(t.function.parameters)]));

function checkCalls(calls, where, only) {
  assert.ok(calls && calls.length >= 1, `${where}: no tool call`);
  for (const call of calls) {
    const name = call.function.name;
    assert.ok(name in toolValidators, `${where}: undeclared function '${name}'`);
    if (only) assert.equal(name, only, where);
    const args = JSON.parse(call.function.arguments);
    assert.ok(toolValidators[name](args), `${where}: ${name}(${call.function.arguments}): ${JSON.stringify(toolValidators[name].errors)}`);
  }
}

for (const thinking of [false, true]) {
  test(`tool_choice required and named: declared names, valid arguments (thinking ${thinking ? 'on' : 'off'})`, async () => {
    const n = few(Math.max(4, SEEDS / 2));
    for (const choice of ['required', { type: 'function', function: { name: 'set_alarm' } }]) {
      const replies = await pool(n, (i) => client.chat.completions.create({
        model: 'x', messages: [{ role: 'user', content: 'Do it.' }], tools, tool_choice: choice,
        temperature: 1, max_tokens: 200, seed: 300 + i, ...(thinking ? { reasoning_effort: 'high' } : {}),
      }));
      replies.forEach((r, i) => {
        const c = r.choices[0];
        const where = `tool_choice ${JSON.stringify(choice)} seed ${300 + i}`;
        assert.equal(c.finish_reason, 'tool_calls', where);
        checkCalls(c.message.tool_calls, where, typeof choice === 'object' ? 'set_alarm' : undefined);
      });
    }
  });
}

test('tool_choice auto: free text, and any call the model opens is valid', async () => {
  const replies = await pool(few(Math.max(4, SEEDS / 2)), (i) => client.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'Anything?' }], tools, tool_choice: 'auto',
    temperature: 1, max_tokens: 120, seed: 500 + i,
    // Make the random model open calls (the bias is on the opening token, which the grammar
    // refuses inside a call and once a whole call no longer fits the budget).
    logit_bias: { 48: 100 },
  }));
  let calls = 0;
  replies.forEach((r, i) => {
    const c = r.choices[0];
    if (c.message.tool_calls?.length) {
      calls += c.message.tool_calls.length;
      checkCalls(c.message.tool_calls, `auto seed ${500 + i} (${c.finish_reason})`);
    }
  });
  assert.ok(calls > 0, 'no reply opened a tool call: the test checked nothing');
});

// Independent recognizers of tests/data/grammars: regular expressions for the regular ones,
// recursive descent for the others.
function parser(text) {
  let i = 0;
  return {
    peek: () => text[i], eat(s) { if (text.startsWith(s, i)) { i += s.length; return true; } return false; },
    re(r) { r.lastIndex = i; const m = r.exec(text); if (!m || m.index !== i) return null; i += m[0].length; return m[0]; },
    done: () => i === text.length,
  };
}
function arithmetic(t) {
  const p = parser(t);
  const factor = () => p.re(/[1-9][0-9]{0,3}/y) !== null || (p.eat('(') && expr() && p.eat(')'));
  const term = () => { if (!factor()) return false; for (let k = 0; k < 3 && (p.peek() === '*' || p.peek() === '/'); k++) { p.eat(p.peek()); if (!factor()) return false; } return true; };
  const expr = () => { if (!term()) return false; for (let k = 0; k < 4 && (p.peek() === '+' || p.peek() === '-'); k++) { p.eat(p.peek()); if (!term()) return false; } return true; };
  return expr() && p.done();
}
function parens(t) {
  const p = parser(t);
  const pairs = { '(': ')', '[': ']', '{': '}' };
  const group = () => { const o = p.peek(); if (!(o in pairs)) return false; p.eat(o); for (let k = 0; k < 2 && p.peek() in pairs; k++) if (!group()) return false; return p.eat(pairs[o]); };
  let n = 0;
  while (n < 3 && p.peek() in pairs) { if (!group()) return false; n++; }
  return n >= 1 && p.done();
}
function lang(t) {
  const p = parser(t);
  const ident = () => p.re(/[a-z][a-z0-9_]{0,7}/y) !== null;
  const atom = () => ident() || p.re(/[0-9]{1,4}/y) !== null || (p.eat('(') && expr() && p.eat(')'));
  const expr = () => { if (!atom()) return false; for (let k = 0; k < 2 && p.re(/ [-+*<] /y); k++) if (!atom()) return false; return true; };
  let n = 0;
  while (n < 4) {
    if (p.eat('let ')) { if (!(ident() && p.eat(' = ') && expr())) return false; }
    else if (p.eat('print ')) { if (!expr()) return false; }
    else break;
    if (!p.eat(';\n')) return false;
    n++;
  }
  return n >= 1 && p.eat('end') && p.done();
}
function sexpr(t) {
  const p = parser(t);
  const elem = () => p.re(/[a-z]{1,6}/y) !== null || p.re(/[0-9]{1,3}/y) !== null || sexp();
  const sexp = () => { if (!p.eat('(') || !elem()) return false; for (let k = 0; k < 3 && p.eat(' '); k++) if (!elem()) return false; return p.eat(')'); };
  return sexp() && p.done();
}
const checkers = {
  arithmetic,
  parens,
  lang,
  sexpr,
  list: (t) => /^(- [a-z]{1,12}( [a-z]{1,12}){0,2}\n){1,5}$/.test(t),
  csv: (t) => /^name,age,city\n(([A-Za-z]{1,10}|"[A-Za-z ,]{0,12}"),[0-9]{1,3},([A-Za-z]{1,10}|"[A-Za-z ,]{0,12}")\n){1,4}$/.test(t),
  date: (t) => /^(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]) ([01][0-9]|2[0-3]):[0-5][0-9]$/.test(t),
  keyvalue: (t) => /^\[[a-z][a-z0-9_]{0,9}\]\n([a-z][a-z0-9_]{0,9} = ([0-9]{1,5}|true|false|"[^"\n]{0,16}")\n){1,4}$/u.test(t),
  intarray: (t) => /^\[-?(0|[1-9][0-9]{0,5})(, -?(0|[1-9][0-9]{0,5})){0,5}\]$/.test(t),
  hexcolors: (t) => /^(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})( (#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})){0,3}$/.test(t),
  answer: (t) => /^(Yes|No), because [^\n.]{1,40}\.$/u.test(t),
};

test('GBNF grammars on /v1/completions: every text is recognized by an independent parser', async () => {
  const files = fs.readdirSync(path.join(dataDir, 'grammars')).filter((f) => f.endsWith('.gbnf')).sort();
  assert.ok(files.length >= 10, `only ${files.length} grammars`);
  for (const f of files.filter((_, k) => k % Math.ceil(files.length / Math.min(LIMIT, files.length)) === 0)) {
    const name = path.basename(f, '.gbnf');
    const check = checkers[name];
    assert.ok(check, `no checker for ${name}`);
    const grammar = fs.readFileSync(path.join(dataDir, 'grammars', f), 'utf8');
    const replies = await pool(few(Math.max(4, SEEDS / 2)), (i) => client.completions.create({
      model: 'x', prompt: 'Output:', max_tokens: 120, temperature: 1, seed: 700 + i, grammar,
    }));
    replies.forEach((r, i) => {
      const c = r.choices[0];
      assert.ok(check(c.text), `${name} seed ${700 + i} (${c.finish_reason}): ${JSON.stringify(c.text)}`);
      assert.equal(c.finish_reason, 'stop', `${name} seed ${700 + i}`);
    });
  }
});

test('bad schemas and grammars are a 400 that says where', async () => {
  const bad = async (body, path, re) => {
    const r = await fetch(`${baseURL}/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` }, body: JSON.stringify(body) });
    assert.equal(r.status, 400);
    const e = (await r.json()).error;
    assert.match(e.message, re);
    return e;
  };
  const e = await bad({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema',
    json_schema: { name: 'n', schema: { type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } } } } },
  'chat/completions', /json schema #\/properties\/tags\/uniqueItems: /);
  assert.equal(e.param, 'response_format.json_schema.schema');
  await bad({ prompt: 'x', grammar: 'root ::= "a" |\nfoo ::= [' }, 'completions', /gbnf 2:\d+/);
  await bad({ prompt: 'x', grammar: 'rot ::= "a"' }, 'completions', /root/);
  await bad({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'xml' } }, 'chat/completions', /response_format.type/);
});
