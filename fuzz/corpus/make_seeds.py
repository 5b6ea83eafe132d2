#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/seed-*) from real files.

Usage: fuzz/corpus/make_seeds.py SHARED_DIR GEMLET_BINARY
  SHARED_DIR     the project's shared folder (oracle/, tokenizer/)
  GEMLET_BINARY  a built `gemlet` (for the .gemlet seeds: `gemlet convert` of the oracle)

The seeds are committed; run this again only to remake them. Each seed is a real file cut down
so that it stays small and valid: the oracle's GGUF and safetensors files keep all of their
metadata and their smallest tensors (with their real bytes); tokenizer.json
keeps the first ids, the merges among them and the added tokens; .npy files keep the first rows
of the golden logits. Other targets' seeds are the texts and request bodies of the tests, and
json_schema_fuzz's the test schemas of tests/data/schemas and MALFORMED_SCHEMAS below.
Crash inputs that a fuzzer found are kept beside the seeds under other names (crash-*, or a
descriptive name), and this script leaves them alone.
"""
import base64
import json
import os
import struct
import subprocess
import sys
import tempfile

MAX_TENSOR_BYTES = 2304  # safetensors: a 64x64 BF16 matrix is 8 KB; this keeps norms and scalars
MAX_GGUF_TENSOR_BYTES = 512  # GGUF: the F32 norms and scalars (the metadata is 66 KB already)
HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- GGUF (v3): header, key/value pairs, tensor infos, padding, data ----------------------
GGUF_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_skip_value(b, off, t):
    if t in GGUF_SCALAR:
        return off + GGUF_SCALAR[t]
    if t == 8:  # string
        (n,) = struct.unpack_from("<Q", b, off)
        return off + 8 + n
    if t == 9:  # array
        et, n = struct.unpack_from("<IQ", b, off)
        off += 12
        if et in GGUF_SCALAR:
            return off + n * GGUF_SCALAR[et]
        for _ in range(n):
            off = gguf_skip_value(b, off, et)
        return off
    raise ValueError("GGUF value type %d" % t)


def gguf_cut(path, keep_tensor=None, max_tensor_bytes=MAX_GGUF_TENSOR_BYTES):
    """The file with its metadata and only some tensors: those `keep_tensor(name)` accepts, by
    default the F32 ones of at most `max_tensor_bytes` and the smallest of another type.
    Returns (file, header only)."""
    b = open(path, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", b, 0)
    assert magic == b"GGUF" and version == 3
    off = 24
    alignment = 32
    for _ in range(n_kv):
        (n,) = struct.unpack_from("<Q", b, off)
        key = b[off + 8:off + 8 + n].decode()
        (t,) = struct.unpack_from("<I", b, off + 8 + n)
        end = gguf_skip_value(b, off + 12 + n, t)
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", b, off + 12 + n)
        off = end
    kv = b[24:off]
    infos = []
    for _ in range(n_tensors):
        start = off
        (n,) = struct.unpack_from("<Q", b, off)
        off += 8 + n
        (nd,) = struct.unpack_from("<I", b, off)
        off += 4 + 8 * nd
        t, data_off = struct.unpack_from("<IQ", b, off)
        off += 12
        infos.append((b[start:off - 8], data_off, t))
    data_start = (off + alignment - 1) // alignment * alignment
    offs = sorted(o for _, o, _ in infos) + [len(b) - data_start]
    size = {o: offs[i + 1] - o for i, o in enumerate(offs[:-1])}
    # The small F32 tensors, and the smallest tensor of the file's other type (Q4_0, Q8_0, BF16).
    other = sorted((size[o], o) for _, o, t in infos if t != 0)
    smallest_other = other[0][1] if other else None
    if keep_tensor is None:
        keep = [(head, o) for head, o, t in infos if size[o] <= max_tensor_bytes or o == smallest_other]
    else:
        keep = [(head, o) for head, o, t in infos if keep_tensor(head[8:8 + struct.unpack_from("<Q", head)[0]].decode())]
    out_infos, data, pos = b"", b"", 0
    for head, o in keep:
        out_infos += head + struct.pack("<Q", pos)
        chunk = b[data_start + o:data_start + o + size[o]]
        data += chunk + b"\0" * ((-len(chunk)) % alignment)
        pos = len(data)
    out = struct.pack("<4sIQQ", b"GGUF", 3, len(keep), n_kv) + kv + out_infos
    out += b"\0" * ((-len(out)) % alignment)
    return out + data, b[:data_start]


# ---- safetensors: u64 header length, JSON header, data ----------------------------------
def safetensors_cut(path):
    b = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", b, 0)
    header = json.loads(b[8:8 + n])
    out_h, data = {}, b""
    if "__metadata__" in header:
        out_h["__metadata__"] = header.pop("__metadata__")
    for name, t in header.items():
        s, e = t["data_offsets"]
        if e - s <= MAX_TENSOR_BYTES:
            out_h[name] = dict(t, data_offsets=[len(data), len(data) + e - s])
            data += b[8 + n + s:8 + n + e]
    h = json.dumps(out_h, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


# ---- tokenizer.json: the first ids ------------------------------------------------------
def tokenizer_cut(path, keep_ids):
    t = json.load(open(path, encoding="utf-8"))
    vocab = {p: i for p, i in t["model"]["vocab"].items() if i < keep_ids}
    t["model"]["vocab"] = vocab
    merges = []
    for m in t["model"]["merges"]:
        l, r = m if isinstance(m, list) else m.split(" ", 1)
        if l in vocab and r in vocab and (l + r) in vocab:
            merges.append(m)
    t["model"]["merges"] = merges
    t["added_tokens"] = [a for a in t.get("added_tokens", []) if a["id"] < keep_ids]
    return json.dumps(t, ensure_ascii=False, indent=None)


# ---- .npy v1.0 ------------------------------------------------------------------------
def npy(descr, shape, payload):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, "(%s)" % ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") if shape else "()")
    h = h.replace("(),", "()")
    pad = (-(10 + len(h) + 1)) % 64
    h = h + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload


def npy_rows(path, rows):
    b = open(path, "rb").read()
    (hl,) = struct.unpack_from("<H", b, 8)
    header = b[10:10 + hl].decode()
    descr = header.split("'descr': '")[1].split("'")[0]
    shape = eval(header.split("'shape': ")[1].split(")")[0] + ")")  # a tuple of ints
    width = {"<f2": 2, "<f4": 4, "<f8": 8, "<i4": 4}[descr]
    row = width * (1 if len(shape) == 1 else shape[1])
    return npy(descr, (rows,) + tuple(shape[1:]), b[10 + hl:10 + hl + rows * row])


# Request bodies as the server tests (tests/server/*.mjs) and OpenAI clients send them.
REQUESTS = {
    'chat-image.json': {'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'Compare'}, {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,iVBORw0KGgo='}}, {'type': 'text', 'text': 'and'}, {'type': 'image_url', 'image_url': 'https://example.com/a.jpg'}]}]},
    'ollama-images.json': {'model': 'm', 'prompt': 'describe', 'images': ['aGk='], 'messages': [{'role': 'user', 'content': 'what {image}', 'images': ['aGk=', '!!']}]},
    'anthropic-image.json': {'max_tokens': 4, 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'look'}, {'type': 'image', 'source': {'type': 'base64', 'media_type': 'image/jpeg', 'data': '/9j/'}}, {'type': 'image', 'source': {'type': 'url', 'url': 'http://x/y.png'}}]}]},
    'ollama-chat.json': {'model': 'm', 'stream': False, 'format': 'json', 'options': {'temperature': 0.5, 'num_predict': 8, 'stop': ['x']}, 'messages': [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': '', 'tool_calls': [{'function': {'name': 'f', 'arguments': {'a': 1}}}]}, {'role': 'tool', 'content': 'ok', 'tool_name': 'f'}]},
    'anthropic-messages.json': {'model': 'm', 'max_tokens': 16, 'system': [{'type': 'text', 'text': 's'}], 'stop_sequences': ['E'], 'tool_choice': {'type': 'tool', 'name': 'f'}, 'tools': [{'name': 'f', 'input_schema': {'type': 'object'}}], 'thinking': {'type': 'enabled', 'budget_tokens': 1024}, 'messages': [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': [{'type': 'tool_use', 'id': 't1', 'name': 'f', 'input': {}}]}, {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 't1', 'content': 'ok'}]}]},
    "chat-basic.json": {"model": "gemlet", "messages": [{"role": "user", "content": "Hello, who are you?"}],
                        "max_tokens": 16, "seed": 1},
    "chat-stream.json": {"model": "gemlet", "messages": [{"role": "user", "content": "Tell me a story."}],
                         "max_tokens": 24, "seed": 7, "temperature": 0.9, "stream": True,
                         "stream_options": {"include_usage": True}},
    "chat-sampling.json": {"model": "gemlet", "messages": [{"role": "system", "content": "Be brief."},
                                                           {"role": "user", "content": "Count for me."}],
                           "max_completion_tokens": 48, "temperature": 1.0, "top_p": 0.95, "top_k": 64,
                           "min_p": 0.05, "presence_penalty": 0.5, "frequency_penalty": -0.5,
                           "logit_bias": {"107": -100, "50": 2.5}, "stop": ["\n\n", "END"], "ignore_eos": True},
    "chat-tools.json": {"model": "gemlet", "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"city\": \"Paris\", \"temp_c\": 21}"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                                    "parameters": {"type": "object", "properties": {
                                                        "city": {"type": "string"}}, "required": ["city"]}}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    "chat-thinking.json": {"model": "gemlet", "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Think first."}]},
        {"role": "user", "content": [{"type": "text", "text": "Think about it."}]},
        {"role": "assistant", "content": "Hm.", "reasoning_content": "Let me see."},
        {"role": "user", "content": "Go on.", "name": "bob"}],
        "reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": True}, "tool_choice": "none"},
    "completion-text.json": {"model": "gemlet", "prompt": "Once upon a time", "max_tokens": 8, "echo": True,
                             "stop": "\n", "seed": 3},
    "completion-tokens.json": {"model": "gemlet", "prompt": [2, 105, 2364, 107], "max_tokens": 4,
                               "stream": True, "temperature": 0},
    "bad-role.json": {"model": "gemlet", "messages": [{"role": "wizard", "content": "x"}]},
}

TEXTS = [
    "Hello, who are you?",
    "<bos><|turn>user\nWhat is the weather in Paris?<turn|>\n<|turn>model\n",
    "  leading spaces,\ttabs\n\n\nand   runs   of   spaces   ",
    "Unicode: caf\u00e9, \u65e5\u672c\u8a9e, \u0440\u0443\u0441\u0441\u043a\u0438\u0439, emoji \U0001F600\U0001F44D\u200d",
    "def f(x):\n    return {\"a\": [1, 2, 3]}  # code\n",
    "\u2581already\u2581marked <0x41> <unused0> <|tool_call>call:f{a:1}<tool_call|>",
    b"\xff\xfe invalid utf-8: \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x96",
]

# gbnf_fuzz: a grammar NUL a chunk-size byte and input (the grammars of src/grammar's tests).
GRAMMARS = {
    "arithmetic": ('root   ::= expr\nexpr   ::= term (("+" | "-") term)*\n'
                   'term   ::= factor (("*" | "/") factor)*\nfactor ::= number | "(" expr ")" | "-" factor\n'
                   'number ::= [0-9]+\n', "(1+2)*-3/4"),
    "json": ('root   ::= ws value ws\n'
             'value  ::= object | array | string | number | "true" | "false" | "null"\n'
             'object ::= "{" ws ( member ("," ws member)* )? "}"\n'
             'member ::= string ws ":" ws value ws\n'
             'array  ::= "[" ws ( value ws ("," ws value ws)* )? "]"\n'
             'string ::= "\\"" ( [^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\\""\n'
             'number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?\n'
             'ws     ::= [ \\t\\n]*\n', '{"a": [1, -2.5e3, "\u00e9\\n", {"b": null}], "c": true}'),
    "list": ('root ::= item ("," " "? item)*\nitem ::= [a-z]+\n', "ab, cd,ef"),
    "language": ('root  ::= ws stmt+\n'
                 'stmt  ::= ident ws "=" ws expr ws ";" ws\n'
                 '        | "print" ws "(" ws expr ws ")" ws ";" ws\n'
                 '        | "while" ws "(" ws expr ws ")" ws "{" ws stmt* "}" ws\n'
                 'expr  ::= atom (ws [-+*<] ws atom)*\natom  ::= ident | [0-9]+ | "(" ws expr ws ")"\n'
                 'ident ::= [a-z] [a-z0-9_]*\nws    ::= [ \\n]*\n', "while (i < 10) { i = i + 1; print(i); }"),
    "csv": ('root ::= row ("\\n" row)* "\\n"?\nrow ::= field ("," field)*\n'
            'field ::= [^,\\n"]* | "\\"" ([^"] | "\\"\\"")* "\\""\n', 'a,"b,""c""",d\ne,f\n'),
    "bounds": ('root ::= "a"{2,4} "b"{3} "c"{1,} "d"{0,2} "e"{0}\n', "aaabbbccd"),
    "negated": ('root ::= [^abc]+ "!" [^\\x00-\\x7F] [^a-zA-Z0-9]\n', "xyz!\u00e9."),
    "utf8": ('root ::= "h\u00e9llo " [\u03b1-\u03c9]+ " " [\\U0001F600-\\U0001F64F] "\u65e5\u672c"?\n',
             "h\u00e9llo \u03b1\u03b2 \U0001F600\u65e5\u672c"),
    "any": ('root ::= "<" . . ">"\n', "<\u00e9\U0001F600>"),
    "balanced": ('root ::= ("(" root ")")*\n', "(()())()"),
    "comments": ('# leading comment\nroot ::= x # trailing\n  | y\n\nx ::= (\n  "1"\n  | "2" )\ny ::= "z"\n', "2"),
    "left-recursive": ('root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]\n', "1+2"),
    "bad-escape": ('root ::= "\\q"\n', "q"),
}


def gbnf_seeds():
    for name, (gbnf, text) in GRAMMARS.items():
        for chunk in (1, 3):
            put("gbnf_fuzz", "%s-%d" % (name, chunk), gbnf.encode() + b"\0" + bytes([chunk - 1]) + text.encode())


# Schemas the converter refuses (json_schema_fuzz), beside the valid ones of tests/data/schemas.
MALFORMED_SCHEMAS = {
    "unsupported-keyword.json": {"type": "array", "uniqueItems": True},
    "ref-cycle.json": {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
                       "$ref": "#/$defs/a"},
    "bad-pattern.json": {"type": "string", "pattern": "(a|b"},
    "empty-range.json": {"type": "integer", "minimum": 5, "maximum": 4},
    "allof-conflict.json": {"allOf": [{"type": "string"}, {"type": "integer"}]},
}


def png_chunk(kind, body):
    import zlib
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def tiny_png(w, h, color_type, depth=8, palette=None):
    """A small valid PNG: samples are a gradient; every row uses filter type (row % 5)."""
    import zlib
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    row_bytes = (w * channels * depth + 7) // 8
    raw = b"".join(bytes([y % 5]) + bytes((x * 7 + y * 13) & 0xFF for x in range(row_bytes)) for y in range(h))
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 0))
    if palette:
        out += png_chunk(b"PLTE", palette)
    return out + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")


def image_seeds(oracle):
    """Seeds of image_decode_fuzz: the oracle's smallest real images and tiny PNG variants."""
    vision = os.path.join(oracle, "tiny-e2b-vision")
    jpg = open(os.path.join(vision, "image-B.jpg"), "rb").read()
    put("image_decode_fuzz", "image-B.jpg", jpg)
    put("image_decode_fuzz", "image-B-cut.jpg", jpg[: len(jpg) // 2])
    put("image_decode_fuzz", "image-C.png", open(os.path.join(vision, "image-C.png"), "rb").read())
    put("image_decode_fuzz", "rgb-8x6.png", tiny_png(8, 6, 2))
    put("image_decode_fuzz", "rgba-5x3.png", tiny_png(5, 3, 6))
    put("image_decode_fuzz", "gray4-9x2.png", tiny_png(9, 2, 0, depth=4))
    put("image_decode_fuzz", "graya16-3x3.png", tiny_png(3, 3, 4, depth=16))
    put("image_decode_fuzz", "palette-4x4.png", tiny_png(4, 4, 3, depth=2, palette=bytes(range(12))))
    put("image_decode_fuzz", "ihdr-only.png", tiny_png(1, 1, 2)[:33])  # header only
    # The same images as request parts: a data: URL and bare base64 (tools/server/image_part.h).
    put("image_decode_fuzz", "rgb-8x6-data-url.txt", b"data:image/png;base64," + base64.b64encode(tiny_png(8, 6, 2)))
    put("image_decode_fuzz", "rgba-5x3-base64.txt", base64.b64encode(tiny_png(5, 3, 6)))
    # A WebP container with a VP8L header (no encoder here: the fuzzer grows the bitstream).
    vp8l = b"\x2f" + struct.pack("<I", (7) | (3 << 14))  + bytes(12)
    put("image_decode_fuzz", "vp8l-header.webp",
        b"RIFF" + struct.pack("<I", 4 + 8 + len(vp8l)) + b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l)


def wav(pcm, channels, rate, bits=16, tag=1):
    """A RIFF/WAVE file around the raw sample bytes `pcm`."""
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
    return b"RIFF" + struct.pack("<I", len(body)) + body


def audio_seeds(oracle):
    """Seeds of audio_decode_fuzz: short cuts of the oracle's clips (a few KB) and WAV variants."""
    audio = os.path.join(oracle, "tiny-e2b-audio")
    click = open(os.path.join(audio, "click.wav"), "rb").read()[44:]  # PCM16 mono 16 kHz
    sweep = open(os.path.join(audio, "sweep.wav"), "rb").read()[44:]
    stereo = open(os.path.join(audio, "stereo44k.wav"), "rb").read()[44:]  # PCM16 stereo 44.1 kHz
    put("audio_decode_fuzz", "click-2k.wav", wav(click[:4000], 1, 16000))
    put("audio_decode_fuzz", "sweep-1k.wav", wav(sweep[8000:10000], 1, 16000))
    put("audio_decode_fuzz", "stereo44k-600.wav", wav(stereo[20000:22400], 2, 44100))
    put("audio_decode_fuzz", "sweep-8bit.wav", wav(bytes(b // 2 + 64 for b in sweep[8001:9001:2]), 1, 16000, bits=8))
    put("audio_decode_fuzz", "sweep-float.wav",
        wav(b"".join(struct.pack("<f", struct.unpack("<h", sweep[i:i + 2])[0] / 32768.0)
                     for i in range(8000, 9000, 2)), 1, 16000, bits=32, tag=3))
    put("audio_decode_fuzz", "click-cut.wav", wav(click[:4000], 1, 16000)[:1500])
    put("audio_decode_fuzz", "header-only.wav", wav(b"", 1, 16000))
    # multipart_form_fuzz: a Content-Type line, then a transcription request's body.
    def form(boundary, fields, wav_bytes):
        b = b""
        for k, v in fields:
            b += b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"" + k + b"\"\r\n\r\n" + v + b"\r\n"
        b += (b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
              b"Content-Type: audio/wav\r\n\r\n" + wav_bytes + b"\r\n--" + boundary + b"--\r\n")
        return b"multipart/form-data; boundary=" + boundary + b"\n" + b
    put("multipart_form_fuzz", "transcription.txt",
        form(b"----x1", [(b"model", b"gemlet"), (b"response_format", b"srt"), (b"language", b"en")],
             wav(click[:600], 1, 16000)))
    put("multipart_form_fuzz", "quoted-boundary.txt",
        form(b"a b", [(b"prompt", b"--a b")], b"RIFF"))
    put("multipart_form_fuzz", "unterminated.txt",
        form(b"zz", [(b"model", b"m")], b"data")[:-12])


def mmproj_seeds():
    """llama.cpp's mmproj files of the tiny oracles (tests/data/mmproj): a whole vision tower
    (the audio file's vision stub, F16 + F32, the audio tower dropped and
    clip.has_audio_encoder set to false), both files cut down, and a header."""
    data = os.path.join(HERE, "..", "..", "tests", "data", "mmproj")
    audio_f16 = os.path.join(data, "tiny-audio-mmproj-f16.gguf")
    stub, _ = gguf_cut(audio_f16, lambda n: n.startswith("v.") or n == "mm.input_projection.weight")
    key = b"clip.has_audio_encoder"
    at = stub.index(key) + len(key) + 4  # after the key, its u32 type (bool), then the value
    stub = stub[:at] + b"\0" + stub[at + 1:]
    put("mmproj_fuzz", "vision-stub-f16.gguf", stub)
    small, header = gguf_cut(os.path.join(data, "tiny-audio-mmproj.gguf"))
    put("mmproj_fuzz", "audio-cut.gguf", small)
    put("mmproj_fuzz", "audio-header-only.gguf", header)
    small, _ = gguf_cut(os.path.join(data, "tiny-vision-mmproj-f16.gguf"))
    put("mmproj_fuzz", "vision-f16-cut.gguf", small)


def main():
    shared, gemlet = sys.argv[1], sys.argv[2]
    gbnf_seeds()
    schemas = os.path.join(HERE, "..", "..", "tests", "data", "schemas")
    for f in sorted(os.listdir(schemas)):
        put("json_schema_fuzz", f, open(os.path.join(schemas, f), "rb").read())
    for name, body in MALFORMED_SCHEMAS.items():
        put("json_schema_fuzz", name, json.dumps(body))
    for name, body in REQUESTS.items():
        put("request_parser_fuzz", name, json.dumps(body))
    for i, text in enumerate(TEXTS):
        put("tokenizer_fuzz", "text-%d.txt" % i, text if isinstance(text, bytes) else text.encode())
    oracle = os.path.join(shared, "oracle")
    for variant, files in (("tiny-e2b", ("model-q4_0.gguf", "model-q8_0.gguf", "model-bf16.gguf")),
                           ("tiny-e4b", ("model-q4_0.gguf", "model-bf16.gguf"))):
        for f in files:
            small, header = gguf_cut(os.path.join(oracle, variant, f))
            put("gguf_fuzz", "%s-%s" % (variant, f), small)
        put("gguf_fuzz", "%s-header-only.gguf" % variant, header)
        put("safetensors_fuzz", "%s.safetensors" % variant,
            safetensors_cut(os.path.join(oracle, variant, "model.safetensors")))
        put("config_json_fuzz", "%s-config.json" % variant, open(os.path.join(oracle, variant, "config.json")).read())
        for rows, name in ((2, "logits-llama-q4_0.npy"), (1, "logits-ref.npy")):
            put("npy_fuzz", "%s-%s" % (variant, name), npy_rows(os.path.join(oracle, variant, name), rows))
    # llama.cpp's gemma4-assistant GGUFs (tests/data/assistant): without the sparse head, and with
    # it (2 KB: its centroids and token ordering stay, the matrices go).
    assistant = os.path.join(HERE, "..", "..", "tests", "data", "assistant")
    put("gguf_fuzz", "tiny-assistant-f32.gguf", gguf_cut(os.path.join(assistant, "tiny-assistant-f32.gguf"))[0])
    put("gguf_fuzz", "tiny-assistant-centroids-f32.gguf",
        gguf_cut(os.path.join(assistant, "tiny-assistant-centroids-f32.gguf"), max_tensor_bytes=2048)[0])
    for variant in ("tiny-e2b-vision", "tiny-e2b-audio", "tiny-e2b-assistant"):
        put("config_json_fuzz", "%s-config.json" % variant, open(os.path.join(oracle, variant, "config.json")).read())
    put("npy_fuzz", "tokens-e2b-32k.npy", npy_rows(os.path.join(oracle, "long", "tokens-e2b-32k.npy"), 16))
    put("npy_fuzz", "scalar-f8.npy", npy("<f8", (), struct.pack("<d", 1.5)))
    put("npy_fuzz", "empty-f4.npy", npy("<f4", (0, 512), b""))
    image_seeds(oracle)
    audio_seeds(oracle)
    mmproj_seeds()
    # tokenizer.json (cut down) NUL tokenizer_config.json NUL generation_config.json
    e2b = os.path.join(oracle, "tiny-e2b")
    for keep in (300, 512):
        put("tokenizer_json_fuzz", "tiny-e2b-%d" % keep,
            tokenizer_cut(os.path.join(e2b, "tokenizer.json"), keep) + "\0" +
            open(os.path.join(e2b, "tokenizer_config.json")).read() + "\0" +
            open(os.path.join(e2b, "generation_config.json")).read())
    put("tokenizer_json_fuzz", "gemma4-cut-600",
        tokenizer_cut(os.path.join(shared, "tokenizer", "gemma4", "tokenizer.json"), 600))
    with tempfile.TemporaryDirectory() as tmp:
        for variant, plan in (("tiny-e2b", "default"),):
            out = os.path.join(tmp, "m.gemlet")
            subprocess.run([gemlet, "convert", os.path.join(oracle, variant), "-o", out, "--plan", plan],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            put("gemlet_file_fuzz", "%s-%s.gemlet" % (variant, plan), open(out, "rb").read())


if __name__ == "__main__":
    main()
