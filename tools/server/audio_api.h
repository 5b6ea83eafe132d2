// OpenAI's audio endpoints, POST /v1/audio/transcriptions and /v1/audio/translations, so that
// clients written for Whisper's API work unchanged: a multipart/form-data body
// (multipart_form.h) with `file` (any format runtime::AudioEncoder decodes: WAV, FLAC, Ogg, Opus, MP3), `model`,
// `language` (transcriptions), `prompt`, `response_format` (json, text, srt, verbose_json, vtt)
// and `temperature`; extensions `max_tokens` (per window, default 448) and
// `max_tokens_per_second` (a cap per second of audio, for random-weight models that never end
// a turn). The audio is transcribed by runtime::Transcribe: windows of at most 30 s cut on
// quiet points, each one chat turn with the text so far as context, generated on the
// scheduler like any request (ApiHandlers::StartRendered) and joined.
//
// Everything a request can get wrong (the form, the file, a model without an audio tower) is
// checked before the reply starts: a 400 naming the field. The reply then streams: a JSON
// format is preceded by keep-alive spaces while windows run (a closed connection cancels the
// rest); a failure after that (the server shutting down) ends the body with an OpenAI error
// object (JSON formats) or an "error: ..." line.
#pragma once

#include "tools/server/api_handlers.h"
#include "tools/server/multipart_form.h"

namespace gemlet::server {

// `form` is the request's multipart body (the HTTP layer parses it).
HttpReply AudioTranscriptions(ApiHandlers& h, const MultipartForm& form, bool translate);

}  // namespace gemlet::server
