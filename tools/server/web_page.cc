#include "tools/server/web_page.h"

namespace gemlet::server {

const char* ChatPageHtml() {
  return R"gemlet_html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gemlet chat</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg: #f7f7f8; --fg: #1d1d1f; --muted: #6b6b75; --accent: #2f6feb; --card: #fff;
          --border: #dcdce0; --code: #f0f0f3; }
  @media (prefers-color-scheme: dark) {
    :root { --bg: #161618; --fg: #e8e8ea; --muted: #9a9aa3; --accent: #6c9bff; --card: #202024;
            --border: #34343a; --code: #2a2a30; }
  }
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.5 system-ui, sans-serif; background: var(--bg); color: var(--fg);
         display: flex; flex-direction: column; height: 100vh; }
  header { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; padding: 8px 16px;
           border-bottom: 1px solid var(--border); background: var(--card); }
  header h1 { font-size: 16px; margin: 0 8px 0 0; }
  header label { color: var(--muted); font-size: 13px; display: flex; gap: 4px; align-items: center; }
  header input[type=number] { width: 70px; }
  header input[type=password] { width: 140px; }
  #system { width: 100%; }
  #log { flex: 1; overflow-y: auto; padding: 16px; display: flex; flex-direction: column; gap: 12px; }
  .msg { max-width: 860px; width: 100%; margin: 0 auto; padding: 10px 14px; border-radius: 10px;
         background: var(--card); border: 1px solid var(--border); overflow-wrap: anywhere; }
  .msg.user { background: transparent; white-space: pre-wrap; }
  .msg .who { font-size: 12px; color: var(--muted); margin-bottom: 4px; }
  .msg.error { border-color: #d33; color: #d33; }
  details.thinking { color: var(--muted); font-size: 13px; border-left: 3px solid var(--border);
                     padding-left: 8px; margin-bottom: 6px; white-space: pre-wrap; }
  details.thinking summary { cursor: pointer; }
  .content pre { background: var(--code); padding: 8px; border-radius: 6px; overflow-x: auto; }
  .content code { background: var(--code); padding: 1px 4px; border-radius: 4px; }
  .content pre code { padding: 0; background: none; }
  .content p { margin: 0.4em 0; }
  .tool { font-family: monospace; font-size: 13px; color: var(--muted); }
  footer { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid var(--border);
           background: var(--card); }
  footer textarea { flex: 1; resize: vertical; min-height: 44px; max-height: 40vh; font: inherit;
                    padding: 8px; border-radius: 8px; border: 1px solid var(--border);
                    background: var(--bg); color: var(--fg); }
  button { font: inherit; padding: 0 18px; border-radius: 8px; border: 1px solid var(--border);
           background: var(--accent); color: #fff; cursor: pointer; }
  button:disabled { opacity: 0.4; cursor: default; }
  #stop { background: #c33; }
  #status { color: var(--muted); font-size: 12px; margin-left: auto; }
  #attach, #attach_audio { background: var(--card); color: var(--fg); }
  #attached { display: flex; gap: 4px; align-items: center; }
  #attached img, .msg.user img { max-height: 120px; max-width: 200px; border-radius: 6px;
                                 border: 1px solid var(--border); display: block; margin: 4px 0; }
  #attached img { max-height: 44px; }
  #attached audio, .msg.user audio { height: 32px; max-width: 220px; display: block; margin: 4px 0; }
</style>
</head>
<body>
<header>
  <h1>gemlet</h1>
  <span id="model">…</span>
  <label><input type="checkbox" id="thinking"> thinking</label>
  <label>temperature <input type="number" id="temperature" value="1.0" step="0.1" min="0" max="2"></label>
  <label>max tokens <input type="number" id="max_tokens" value="512" min="1"></label>
  <label>API key <input type="password" id="apikey" autocomplete="off"></label>
  <button id="clear" type="button">New chat</button>
  <span id="status"></span>
  <input id="system" type="text" placeholder="System prompt (optional)">
</header>
<main id="log" aria-live="polite"></main>
<footer>
  <button id="attach" type="button" title="Attach images (the model needs a vision tower)">Image</button>
  <input id="image" type="file" accept="image/png,image/jpeg,image/webp" multiple hidden>
  <button id="attach_audio" type="button" title="Attach audio: speech or sounds (the model needs an audio tower)">Audio</button>
  <input id="audio" type="file" accept="audio/wav,audio/x-wav,audio/mpeg,audio/flac,audio/ogg,audio/opus" multiple hidden>
  <span id="attached"></span>
  <textarea id="input" placeholder="Message (Enter to send, Shift+Enter for a new line)"></textarea>
  <button id="send" type="button">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</footer>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const log = $("log");
let history = [];        // OpenAI messages of the conversation
let controller = null;   // AbortController of the running request
let images = [];         // data: URLs of the images attached to the next message
let audios = [];         // data: URLs of the audio clips attached to the next message

// Attached images go with the next message as OpenAI image_url parts (data: URLs), and audio
// clips as input_audio parts (base64 and a format), before its text; the server encodes each
// once (a later turn about it reuses it).
function showAttached() {
  const box = $("attached");
  box.textContent = "";
  for (const url of images) {
    const img = document.createElement("img");
    img.src = url;
    img.alt = "attached image";
    box.appendChild(img);
  }
  for (const url of audios) box.appendChild(audioElement(url));
}
function audioElement(url) {
  const a = document.createElement("audio");
  a.src = url;
  a.controls = true;
  return a;
}
// OpenAI's input_audio part of a data: URL ("data:audio/wav;base64,...").
function audioPart(url) {
  const type = url.slice(5, url.indexOf(";")).toLowerCase();
  const formats = { "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/flac": "flac", "audio/x-flac": "flac",
                    "audio/ogg": "ogg", "audio/opus": "opus" };
  return { type: "input_audio", input_audio: { data: url.slice(url.indexOf(",") + 1), format: formats[type] || "wav" } };
}
function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}
$("attach").addEventListener("click", () => $("image").click());
$("image").addEventListener("change", async () => {
  for (const file of $("image").files) images.push(await readAsDataUrl(file));
  $("image").value = "";
  showAttached();
});
$("attach_audio").addEventListener("click", () => $("audio").click());
$("audio").addEventListener("change", async () => {
  for (const file of $("audio").files) audios.push(await readAsDataUrl(file));
  $("audio").value = "";
  showAttached();
});

$("apikey").value = localStorage.getItem("gemlet.apikey") || "";
$("apikey").addEventListener("change", () => localStorage.setItem("gemlet.apikey", $("apikey").value));

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("apikey").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

fetch("v1/models", { headers: headers() }).then((r) => r.json()).then((j) => {
  $("model").textContent = j.data && j.data[0] ? j.data[0].id : "";
}).catch(() => {});

// --- a small, safe markdown renderer (everything is escaped first) ---
function esc(s) {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
function inline(s) {
  return s
    .replace(/`([^`]+)`/g, (m, c) => "<code>" + c + "</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g,
             '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
}
function markdown(src) {
  const out = [];
  const parts = src.split(/```/);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {  // fenced code (the first line may name the language)
      const nl = part.indexOf("\n");
      const code = nl >= 0 ? part.slice(nl + 1) : part;
      out.push("<pre><code>" + esc(code) + "</code></pre>");
      return;
    }
    let list = null;
    let para = [];
    const flush = () => {
      if (para.length) { out.push("<p>" + para.join("<br>") + "</p>"); para = []; }
      if (list) { out.push("</" + list + ">"); list = null; }
    };
    for (const raw of esc(part).split("\n")) {
      const line = raw.trimEnd();
      let m;
      if (!line.trim()) { flush(); continue; }
      if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
        flush(); const n = m[1].length; out.push("<h" + n + ">" + inline(m[2]) + "</h" + n + ">");
      } else if ((m = line.match(/^\s*[-*+]\s+(.*)$/)) || (m = line.match(/^\s*\d+[.)]\s+(.*)$/))) {
        const kind = /^\s*\d/.test(line) ? "ol" : "ul";
        if (para.length) { out.push("<p>" + para.join("<br>") + "</p>"); para = []; }
        if (list !== kind) { if (list) out.push("</" + list + ">"); out.push("<" + kind + ">"); list = kind; }
        out.push("<li>" + inline(m[1]) + "</li>");
      } else {
        if (list) { out.push("</" + list + ">"); list = null; }
        para.push(inline(line));
      }
    }
    flush();
  });
  return out.join("");
}

function addMessage(role) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const who = document.createElement("div");
  who.className = "who";
  who.textContent = role === "user" ? "You" : role === "assistant" ? "Assistant" : role;
  div.appendChild(who);
  log.appendChild(div);
  return div;
}

function scrollDown() { log.scrollTop = log.scrollHeight; }

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  $("status").textContent = busy ? "generating…" : "";
}

async function send() {
  const text = $("input").value;
  if ((!text.trim() && !images.length && !audios.length) || controller) return;
  $("input").value = "";
  const u = addMessage("user");
  for (const url of images) {
    const img = document.createElement("img");
    img.src = url;
    img.alt = "image";
    u.appendChild(img);
  }
  for (const url of audios) u.appendChild(audioElement(url));
  u.appendChild(document.createTextNode(text));
  if (images.length || audios.length) {
    const parts = images.map((url) => ({ type: "image_url", image_url: { url } })).concat(audios.map(audioPart));
    if (text) parts.push({ type: "text", text });
    history.push({ role: "user", content: parts });
  } else {
    history.push({ role: "user", content: text });
  }
  images = [];
  audios = [];
  showAttached();

  const a = addMessage("assistant");
  const thinking = document.createElement("details");
  thinking.className = "thinking";
  thinking.open = true;
  thinking.innerHTML = "<summary>Thinking</summary>";
  const thought = document.createElement("div");
  thinking.appendChild(thought);
  thinking.hidden = true;
  a.appendChild(thinking);
  const content = document.createElement("div");
  content.className = "content";
  a.appendChild(content);
  const tools = document.createElement("div");
  tools.className = "tool";
  a.appendChild(tools);

  let reply = "", reasoning = "";
  // Repaint at most every 50 ms: re-rendering the whole reply for every token would cost
  // O(n^2) on long, fast replies and starve the page (and the stop button).
  let paintTimer = null;
  const paint = () => {
    if (paintTimer !== null) { clearTimeout(paintTimer); paintTimer = null; }
    if (reasoning) { thinking.hidden = false; thought.textContent = reasoning; }
    if (reply) {
      if (reasoning) thinking.open = false;
      content.innerHTML = markdown(reply);
    }
    scrollDown();
  };
  const schedulePaint = () => { if (paintTimer === null) paintTimer = setTimeout(paint, 50); };
  const messages = [];
  if ($("system").value.trim()) messages.push({ role: "system", content: $("system").value });
  messages.push(...history);
  const body = {
    model: $("model").textContent || "gemlet",
    messages,
    stream: true,
    stream_options: { include_usage: true },
    temperature: Number($("temperature").value),
    max_tokens: Number($("max_tokens").value) || undefined,
    reasoning_effort: $("thinking").checked ? "medium" : "none",
  };
  controller = new AbortController();
  setBusy(true);
  let stopped = false;
  try {
    const res = await fetch("v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(body), signal: controller.signal,
    });
    if (!res.ok) {
      let msg = res.status + " " + res.statusText;
      try { msg = (await res.json()).error.message; } catch (e) {}
      throw new Error(msg);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;  // comments keep the connection alive
          const data = line.slice(6);
          if (data === "[DONE]") continue;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message);
          if (chunk.usage) $("status").textContent = chunk.usage.completion_tokens + " tokens";
          const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
          if (!delta) continue;
          if (delta.reasoning_content) reasoning += delta.reasoning_content;
          if (delta.content) reply += delta.content;
          if (delta.tool_calls) {
            for (const tc of delta.tool_calls) {
              tools.textContent += "tool call: " + tc.function.name + "(" + tc.function.arguments + ")\n";
            }
          }
          schedulePaint();
        }
      }
    }
    paint();
  } catch (e) {
    paint();  // whatever arrived before the stop or the error
    if (e.name === "AbortError") {
      stopped = true;
    } else {
      a.classList.add("error");
      content.appendChild(document.createTextNode("Error: " + e.message));
    }
  } finally {
    controller = null;
    setBusy(false);
    if (stopped) {
      const note = document.createElement("div");
      note.className = "who stopped";
      note.textContent = "(stopped)";
      a.appendChild(note);
    }
    a.dataset.done = stopped ? "stopped" : "finished";
    history.push({ role: "assistant", content: reply });
    scrollDown();
  }
}

$("send").addEventListener("click", send);
$("stop").addEventListener("click", () => { if (controller) controller.abort(); });
$("clear").addEventListener("click", () => {
  if (controller) controller.abort();
  history = [];
  images = [];
  audios = [];
  showAttached();
  log.innerHTML = "";
});
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
});
</script>
</body>
</html>
)gemlet_html";
}

}  // namespace gemlet::server
