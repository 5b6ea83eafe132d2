// The chat page served at "/": one self-contained HTML file (CSS and JS inline) compiled into
// the binary. Streams replies over /v1/chat/completions, renders markdown, shows the thought
// channel apart, and has a stop button (aborts the fetch, which cancels the generation).
#pragma once

namespace gemlet::server {

const char* ChatPageHtml();

}  // namespace gemlet::server
