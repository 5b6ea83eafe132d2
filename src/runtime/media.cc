#include "runtime/media.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace gemlet::runtime {

const char* MediaKindName(MediaKind kind) { return kind == MediaKind::kImage ? "image" : "audio"; }

bool SameMedia(const MediaEmbedding& a, const MediaEmbedding& b) {
  if (&a == &b) return true;
  return a.kind == b.kind && a.hash == b.hash && a.rows == b.rows && a.dim == b.dim && a.data == b.data;
}

MediaPrompt MediaPrompt::Slice(int64_t b, int64_t e) const {
  GEMLET_CHECK(0 <= b && b <= e && e <= size());
  MediaPrompt out;
  out.tokens.assign(tokens.begin() + b, tokens.begin() + e);
  for (const MediaSpan& s : media) {
    const int64_t lo = std::max(b, s.start), hi = std::min(e, s.start + s.rows);
    if (lo >= hi) continue;
    out.media.push_back(MediaSpan{lo - b, s.media, s.offset + (lo - s.start), hi - lo});
  }
  return out;
}

Status GatherMediaRows(std::span<const MediaSpan> media, int64_t n, int64_t dim, std::vector<int64_t>* rows,
                       std::vector<float>* embeddings) {
  rows->clear();
  embeddings->clear();
  int64_t end = 0;
  for (const MediaSpan& s : media) {
    if (!s.media || s.rows < 0 || s.start < end || s.start + s.rows > n || s.offset < 0 ||
        s.offset + s.rows > s.media->rows) {
      return InvalidArgument("media spans must be sorted runs within the " + std::to_string(n) +
                             " tokens fed and within their media's rows");
    }
    if (s.media->dim != dim) {
      return InvalidArgument(std::string("the ") + MediaKindName(s.media->kind) + " embedding has width " +
                             std::to_string(s.media->dim) + ", the model's hidden size is " + std::to_string(dim));
    }
    for (int64_t r = 0; r < s.rows; ++r) rows->push_back(s.start + r);
    const float* src = s.media->data.data() + s.offset * dim;
    embeddings->insert(embeddings->end(), src, src + s.rows * dim);
    end = s.start + s.rows;
  }
  return Status::Ok();
}

namespace {

// The media row at position p of a sequence (spans sorted), or {null, 0}.
struct Row {
  const MediaEmbedding* media = nullptr;
  int64_t index = 0;
};

}  // namespace

int64_t CommonPrefixLength(std::span<const int32_t> a, std::span<const MediaSpan> a_media,
                           std::span<const int32_t> b, std::span<const MediaSpan> b_media) {
  const int64_t n = static_cast<int64_t>(std::min(a.size(), b.size()));
  size_t ia = 0, ib = 0;  // the first span of each side not wholly before p
  auto row = [](std::span<const MediaSpan> spans, size_t* i, int64_t p) {
    while (*i < spans.size() && spans[*i].start + spans[*i].rows <= p) ++*i;
    if (*i < spans.size() && spans[*i].start <= p) {
      const MediaSpan& s = spans[*i];
      return Row{s.media.get(), s.offset + (p - s.start)};
    }
    return Row{};
  };
  const MediaEmbedding* last_a = nullptr;  // the last pair of media found equal
  const MediaEmbedding* last_b = nullptr;
  for (int64_t p = 0; p < n; ++p) {
    if (a[p] != b[p]) return p;
    const Row ra = row(a_media, &ia, p), rb = row(b_media, &ib, p);
    if (!ra.media && !rb.media) continue;
    if (!ra.media || !rb.media || ra.index != rb.index) return p;
    if (ra.media != last_a || rb.media != last_b) {
      if (!SameMedia(*ra.media, *rb.media)) return p;
      last_a = ra.media;
      last_b = rb.media;
    }
  }
  return n;
}

Result<std::string> PlaceMedia(std::string_view text, int64_t n, std::string_view placeholder,
                               std::string_view alias) {
  std::string out;
  int64_t placed = 0;
  for (size_t i = 0; i < text.size();) {
    if (!alias.empty() && text.substr(i, alias.size()) == alias) {
      out += placeholder;
      i += alias.size();
      ++placed;
    } else if (text.substr(i, placeholder.size()) == placeholder) {
      out += placeholder;
      i += placeholder.size();
      ++placed;
    } else {
      out += text[i++];
    }
  }
  if (placed == 0) {
    std::string first;
    for (int64_t k = 0; k < n; ++k) first += placeholder;
    return first + out;
  }
  if (placed != n) {
    return InvalidArgument("the text places " + std::to_string(placed) + " " + std::string(placeholder) + " but " +
                           std::to_string(n) + " were given (write " + std::string(alias) + " or " +
                           std::string(placeholder) + " once per item, or none to put them all first)");
  }
  return out;
}

Result<MediaPrompt> ExpandMedia(std::span<const int32_t> tokens, std::span<const MediaRef> media,
                                std::span<const MediaTokens> kinds) {
  for (const MediaRef& m : media) {
    const size_t k = static_cast<size_t>(m->kind);
    if (k >= kinds.size() || kinds[k].placeholder < 0) {
      return InvalidArgument(std::string("this model reads no ") + MediaKindName(m->kind) + "s");
    }
  }
  MediaPrompt out;
  std::vector<size_t> next(kinds.size(), 0);  // per kind: the media index searched from
  auto find_next = [&](size_t kind) -> const MediaRef* {
    for (size_t& i = next[kind]; i < media.size(); ++i) {
      if (static_cast<size_t>(media[i]->kind) == kind) return &media[i++];
    }
    return nullptr;
  };
  for (int32_t t : tokens) {
    size_t kind = kinds.size();
    for (size_t k = 0; k < kinds.size(); ++k) {
      if (kinds[k].placeholder >= 0 && t == kinds[k].placeholder) kind = k;
    }
    if (kind == kinds.size()) {
      out.tokens.push_back(t);
      continue;
    }
    const MediaRef* m = find_next(kind);
    const char* name = MediaKindName(static_cast<MediaKind>(kind));
    if (!m) return InvalidArgument(std::string("the prompt has more ") + name + " placeholders than " + name + "s");
    out.tokens.push_back(kinds[kind].open);
    out.media.push_back(MediaSpan{out.size(), *m, 0, (*m)->rows});
    out.tokens.insert(out.tokens.end(), (*m)->rows, kinds[kind].placeholder);
    out.tokens.push_back(kinds[kind].close);
  }
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (find_next(k)) {
      const char* name = MediaKindName(static_cast<MediaKind>(k));
      return InvalidArgument(std::string("the prompt has fewer ") + name + " placeholders than " + name + "s");
    }
  }
  return out;
}

uint64_t HashBytes(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Result<std::vector<uint8_t>> ReadMediaFile(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot open the " + what);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return IoError(path + ": cannot read the " + what);
  return bytes;
}

}  // namespace gemlet::runtime
