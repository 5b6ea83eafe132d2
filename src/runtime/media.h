// Media in a prompt: images (and audio clips) enter the decoder as soft tokens, rows of its
// input embedding, at runs of placeholder ids (spec-multimodal §1.4, §2.3). This file holds
// what every media kind shares:
//   * where a message's media go in its text (PlaceMedia: `{image}` or `<|image|>` marks the
//     place, else the media come before the text, as the chat template writes a content part);
//   * the placeholder expansion of the tokenized prompt (ExpandMedia: each placeholder id
//     becomes open, n × placeholder, close — Gemma4Processor's boi, n × image, eoi);
//   * a prompt as token ids plus the runs of them that take a media item's rows (MediaPrompt),
//     which Session::Prefill feeds and the prefix cache compares by content.
// The encoders that make a MediaEmbedding (runtime/image_encoder.h for images) are apart.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::runtime {

enum class MediaKind { kImage, kAudio };
const char* MediaKindName(MediaKind kind);  // "image", "audio"

// The soft tokens of one image or audio clip.
struct MediaEmbedding {
  MediaKind kind = MediaKind::kImage;
  int64_t rows = 0;         // soft tokens
  int64_t dim = 0;          // D, the decoder's hidden size
  std::vector<float> data;  // [rows, dim]
  // Content hash of the source bytes and the encoding options (FNV-1a 64); equal media have
  // equal hashes, and SameMedia compares the rows themselves when the hashes agree.
  uint64_t hash = 0;
};
using MediaRef = std::shared_ptr<const MediaEmbedding>;

// True if a and b hold the same rows (the same object, or equal hashes and equal data).
bool SameMedia(const MediaEmbedding& a, const MediaEmbedding& b);

// Rows [start, start + rows) of a token sequence take rows [offset, offset + rows) of `media`.
struct MediaSpan {
  int64_t start = 0;
  MediaRef media;
  int64_t offset = 0;
  int64_t rows = 0;
};

// Token ids, some runs of which are media rows (spans sorted by start, not overlapping).
struct MediaPrompt {
  std::vector<int32_t> tokens;
  std::vector<MediaSpan> media;
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  // Tokens [b, e) with the parts of the spans inside them (starts relative to b).
  MediaPrompt Slice(int64_t b, int64_t e) const;
};

// The spans of `media` (starts relative to the tokens fed, sorted, within [0, n)) as the
// Session's embedding rows: indices [k] and rows [k, dim]. InvalidArgument unless the spans
// are sorted, inside the n tokens, within their media's rows and of width dim.
Status GatherMediaRows(std::span<const MediaSpan> media, int64_t n, int64_t dim, std::vector<int64_t>* rows,
                       std::vector<float>* embeddings);

// Tokens at the start of (a, a_media) and (b, b_media) that agree: the same ids, and at a
// position inside a media span on either side, the same media row on both.
int64_t CommonPrefixLength(std::span<const int32_t> a, std::span<const MediaSpan> a_media,
                           std::span<const int32_t> b, std::span<const MediaSpan> b_media);

// The ids of one media kind's placeholder expansion (spec-multimodal §1.4: boi 255999,
// image 258880, eoi 258882 for images; from the model's config).
struct MediaTokens {
  int32_t open = -1;
  int32_t placeholder = -1;
  int32_t close = -1;
};

// The text of a message with `n` media items of one kind placed: each `alias` (e.g.
// "{image}") becomes `placeholder` ("<|image|>"); with no placeholder at all, n placeholders
// come first. InvalidArgument if the text then places a number other than n.
Result<std::string> PlaceMedia(std::string_view text, int64_t n, std::string_view placeholder,
                               std::string_view alias);

// Expands each placeholder id of `kinds` (a kind's tokens, indexed by MediaKind) in `tokens`
// into open, rows × placeholder, close, with the next media item of that kind filling the
// placeholders: media[i] in order per kind. InvalidArgument naming the kind if the counts of
// placeholders and media differ.
Result<MediaPrompt> ExpandMedia(std::span<const int32_t> tokens, std::span<const MediaRef> media,
                                std::span<const MediaTokens> kinds);

// The whole file at `path`; errors name it and `what` ("audio file", "image file").
Result<std::vector<uint8_t>> ReadMediaFile(const std::string& path, const std::string& what);

// FNV-1a 64 of bytes, continuing from `h`.
uint64_t HashBytes(const void* data, size_t size, uint64_t h = 0xcbf29ce484222325ull);

}  // namespace gemlet::runtime
