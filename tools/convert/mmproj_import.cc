#include "tools/convert/mmproj_import.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <unordered_set>

#include "model/gemma4_audio_tensors.h"
#include "model/gemma4_vision_tensors.h"
#include "tools/convert/gguf_import.h"

namespace gemlet::convert {

namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// softplus⁻¹(y) = log(expm1(y)) = y + log(−expm1(−y)), the second form stable for every y > 0.
double InverseSoftplusExact(double y) { return y + std::log(-std::expm1(-y)); }

// The float in [lo, hi] (lo ≤ hi) with the fewest significant bits: 0 if the range holds it,
// else lo rounded up to 0, 1, 2, ... mantissa bits until it fits.
float Simplest(float lo, float hi) {
  if (lo <= 0.0f && hi >= 0.0f) return 0.0f;
  const bool negative = hi < 0.0f;
  if (negative) {
    const float t = -lo;
    lo = -hi;
    hi = t;
  }
  const uint32_t u = Bits(lo);
  for (int kept = 0; kept <= 23; ++kept) {
    const uint32_t mask = (1u << (23 - kept)) - 1;
    const float c = FromBits((u + mask) & ~mask);
    if (c <= hi) return negative ? -c : c;
  }
  return negative ? -lo : lo;
}

// The image/audio token ids: the vocabulary's pieces, else Gemma 4's ids (HF's config defaults,
// which is what the HF path writes for a checkpoint whose config.json names none). An mmproj
// holds no token ids: llama.cpp takes them from the text model's vocabulary as well.
void SetTokenIds(const Vocab& vocab, std::initializer_list<std::pair<const char*, int64_t*>> ids) {
  for (const auto& [piece, id] : ids) {
    for (size_t i = 0; i < vocab.pieces.size(); ++i) {
      if (vocab.pieces[i] == piece) *id = static_cast<int64_t>(i);
    }
  }
}

// The config through FromJson(ToJson()), which checks what the encoder implements.
template <typename Config>
Result<Config> Checked(const Config& c, const std::string& path) {
  auto checked = Config::FromJson(c.ToJson());
  if (!checked.ok()) return checked.status().WithContext(path);
  return *checked;
}

class Reader {
 public:
  Reader(const GgufFile& g, MmprojTowers* out) : g_(g), out_(out) {}

  const std::string& path() const { return g_.path(); }

  Result<int64_t> Int(const std::string& key) const {
    ASSIGN_OR_RETURN(uint32_t v, g_.GetU32(key));
    return static_cast<int64_t>(v);
  }

  // clip.<tower>.<key> for each key.
  Status Ints(const std::string& tower, std::initializer_list<std::pair<const char*, int64_t*>> keys) const {
    for (const auto& [key, out] : keys) {
      ASSIGN_OR_RETURN(*out, Int("clip." + tower + "." + key));
    }
    return Status::Ok();
  }

  // clip.<tower>.attention.layer_norm_epsilon, as the shortest decimal (1e-6, as in config.json).
  Result<double> Eps(const std::string& tower) const {
    ASSIGN_OR_RETURN(float eps, g_.GetF32("clip." + tower + ".attention.layer_norm_epsilon"));
    return ShortestDecimal(eps);
  }

  // The tower's projector type (clip.<tower>.projector_type, or the older clip.projector_type)
  // must be `want`, and its projection's output (clip.<tower>.projection_dim) the text model's
  // hidden size.
  Status CheckTower(const std::string& tower, const char* want, int64_t text_hidden) const {
    std::string key = "clip." + tower + ".projector_type";
    if (!g_.Has(key)) key = "clip.projector_type";
    ASSIGN_OR_RETURN(std::string type, g_.GetString(key));
    if (type != want) {
      return Unsupported(path() + ": " + key + " is '" + type + "'; gemlet reads Gemma 4's " + want +
                         " (a projector of another model family cannot go with a Gemma 4 text model)");
    }
    key = "clip." + tower + ".projection_dim";
    ASSIGN_OR_RETURN(int64_t dim, Int(key));
    if (dim != text_hidden) {
      return InvalidArgument(path() + ": " + key + " is " + std::to_string(dim) +
                             " but the text model's hidden size is " + std::to_string(text_hidden) +
                             " (this mmproj belongs to another model)");
    }
    return Status::Ok();
  }

  Result<const GgufTensorInfo*> Tensor(const std::string& name, size_t rank) const {
    const GgufTensorInfo* t = g_.FindTensor(name);
    if (!t) return NotFound(path() + ": tensor " + name + " is missing");
    if (t->shape.size() != rank) {
      return Corrupt(path() + ": tensor " + name + " has shape " + ShapeString(t->shape) + ", expected " +
                     std::to_string(rank) + " dimensions");
    }
    return t;
  }

  // Axis `axis` of tensor `name` (of `rank` dimensions): a size the metadata does not give.
  Result<int64_t> Dim(const std::string& name, size_t rank, size_t axis) const {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, Tensor(name, rank));
    return t->shape[axis];
  }

  // The tensors of `specs`, found by their gguf_name, undone as the header says.
  Result<std::vector<Checkpoint::Item>> Items(const std::vector<model::TensorSpec>& specs) {
    std::vector<Checkpoint::Item> items;
    for (const model::TensorSpec& spec : specs) {
      expected_.insert(spec.gguf_name);
      const GgufTensorInfo* t = g_.FindTensor(spec.gguf_name);
      // A clip bound the file lacks stays unbounded, as on the HF path.
      if (!t && spec.cls == model::TensorClass::kScalar) continue;
      if (!t) return NotFound(path() + ": tensor " + spec.gguf_name + " is missing");
      ASSIGN_OR_RETURN(SourceTensor src, FromGguf(g_, *t));
      const bool patch = spec.name == "v.patch_embd";
      const bool conv_dw = spec.cls == model::TensorClass::kAudioConv && spec.shape.size() == 3;
      std::vector<int64_t> want = spec.shape;
      if (patch) {  // [D, 3, p, p] of [D, p·p·3]
        const int64_t p = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(spec.shape[1] / 3))));
        want = {spec.shape[0], 3, p, p};
      } else if (conv_dw) {  // [C, K] of [C, 1, K]
        want = {spec.shape[0], spec.shape[2]};
      }
      if (t->shape != want) {
        return Corrupt(path() + ": tensor " + spec.gguf_name + " has shape " + ShapeString(t->shape) +
                       " but the config needs " + ShapeString(want));
      }
      if (patch) {
        RETURN_IF_ERROR(Unpermute(spec, &src));
      } else if (spec.name.ends_with(".per_dim_scale")) {
        RETURN_IF_ERROR(UndoSoftplus(spec, &src));
      }
      src.shape = spec.shape;
      items.push_back({spec, std::move(src)});
    }
    return items;
  }

  // Every tensor of the file must belong to a tower read.
  Status CheckNoneLeft() const {
    for (const GgufTensorInfo& t : g_.tensors()) {
      if (!expected_.count(t.name)) {
        return Corrupt(path() + ": unexpected tensor " + t.name + " " + ShapeString(t.shape) +
                       " (not part of the Gemma 4 towers this file's metadata describes)");
      }
    }
    return Status::Ok();
  }

 private:
  // v.patch_embd [D, 3, p, p] (channel, row, col) back to HF's [D, p·p·3] (row, col, channel),
  // element for element at the source type.
  Status Unpermute(const model::TensorSpec& spec, SourceTensor* src) {
    if (src->type != SourceType::kF32 && src->type != SourceType::kF16 && src->type != SourceType::kBF16) {
      return Unsupported(path() + ": tensor " + spec.gguf_name + " is " + SourceTypeName(src->type) +
                         "; the patch embedding must be F32, F16 or BF16");
    }
    const size_t esize = src->type == SourceType::kF32 ? 4 : 2;
    const int64_t D = spec.shape[0], pp = spec.shape[1] / 3;
    std::vector<uint8_t>& buf = out_->owned.emplace_back(src->nbytes);
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t ch = 0; ch < 3; ++ch) {
        for (int64_t rc = 0; rc < pp; ++rc) {  // row · p + col
          std::memcpy(buf.data() + ((d * pp + rc) * 3 + ch) * esize, src->data + ((d * 3 + ch) * pp + rc) * esize,
                      esize);
        }
      }
    }
    src->data = buf.data();
    src->mapped = false;
    return Status::Ok();
  }

  // softplus(per_dim_scale) back to per_dim_scale, as f32.
  Status UndoSoftplus(const model::TensorSpec& spec, SourceTensor* src) {
    std::vector<float> s(static_cast<size_t>(src->rows() * src->cols()));
    DecodeRows(*src, 0, src->rows(), s.data());
    for (size_t i = 0; i < s.size(); ++i) {
      if (!(s[i] > 0.0f) || !std::isfinite(s[i])) {
        return Corrupt(path() + ": " + spec.gguf_name + "[" + std::to_string(i) + "] = " + std::to_string(s[i]) +
                       " is not a softplus value (llama.cpp stores softplus(per_dim_scale), > 0)");
      }
      s[i] = InverseSoftplus(s[i]);
    }
    std::vector<uint8_t>& buf = out_->owned.emplace_back(s.size() * 4);
    std::memcpy(buf.data(), s.data(), buf.size());
    src->type = SourceType::kF32;
    src->data = buf.data();
    src->nbytes = buf.size();
    src->mapped = false;
    return Status::Ok();
  }

  const GgufFile& g_;
  MmprojTowers* out_;
  std::unordered_set<std::string> expected_;
};

// clip.vision.* and the tensor shapes as HF's vision_config. Not in the file, Gemma 4's fixed
// values (llama.cpp hard-codes them too): pooling_kernel_size 3, rope_theta 100,
// default_output_length 280, and the activation, HF's gelu_pytorch_tanh (the tower has no
// other; llama.cpp writes no clip.use_gelu and so runs GELU-quick). head_dim is
// v.blk.0.attn_q_norm's length, position_embedding_size the rows of v.position_embd.
Result<model::Gemma4VisionConfig> VisionConfig(const Reader& r, int64_t text_hidden, const Vocab& vocab) {
  model::Gemma4VisionConfig c;
  RETURN_IF_ERROR(r.Ints("vision", {{"embedding_length", &c.hidden_size},
                                    {"feed_forward_length", &c.intermediate_size},
                                    {"block_count", &c.num_layers},
                                    {"attention.head_count", &c.num_heads},
                                    {"patch_size", &c.patch_size}}));
  ASSIGN_OR_RETURN(c.rms_norm_eps, r.Eps("vision"));
  ASSIGN_OR_RETURN(c.head_dim, r.Dim("v.blk.0.attn_q_norm.weight", 1, 0));
  ASSIGN_OR_RETURN(c.position_embedding_size, r.Dim("v.position_embd.weight", 3, 1));
  c.text_hidden_size = text_hidden;
  SetTokenIds(vocab, {{"<|image>", &c.boi_token_id}, {"<|image|>", &c.image_token_id}, {"<image|>", &c.eoi_token_id}});
  return Checked(c, r.path());
}

// clip.audio.* and the tensor shapes as HF's audio_config. Derived from shapes: the
// subsampling channels (a.conv1d.0 / .1 kernels), conv_kernel_size (a.blk.0.conv_dw),
// output_proj_dims (a.pre_encode.out). Not in the file, Gemma 4's fixed values (llama.cpp
// hard-codes them in its gemma4a graph): attention_chunk_size 12, attention_context_left 13 /
// right 0, attention_logit_cap 50, residual_weight 0.5, gradient_clipping 1e10.
Result<model::Gemma4AudioConfig> AudioConfig(const Reader& r, int64_t text_hidden, const Vocab& vocab) {
  model::Gemma4AudioConfig c;
  int64_t ffn = 0;
  RETURN_IF_ERROR(r.Ints("audio", {{"embedding_length", &c.hidden_size},
                                   {"block_count", &c.num_layers},
                                   {"attention.head_count", &c.num_heads},
                                   {"num_mel_bins", &c.n_mels},
                                   {"feed_forward_length", &ffn}}));
  ASSIGN_OR_RETURN(c.rms_norm_eps, r.Eps("audio"));
  if (ffn != 4 * c.hidden_size) {
    return Unsupported(r.path() + ": clip.audio.feed_forward_length is " + std::to_string(ffn) +
                       ", not 4 × clip.audio.embedding_length (" + std::to_string(4 * c.hidden_size) +
                       ") as Gemma 4's conformer has");
  }
  ASSIGN_OR_RETURN(c.sscp_channels[0], r.Dim("a.conv1d.0.weight", 4, 0));
  ASSIGN_OR_RETURN(c.sscp_channels[1], r.Dim("a.conv1d.1.weight", 4, 0));
  ASSIGN_OR_RETURN(c.conv_kernel_size, r.Dim("a.blk.0.conv_dw.weight", 2, 1));
  ASSIGN_OR_RETURN(c.output_proj_dims, r.Dim("a.pre_encode.out.weight", 2, 0));
  c.text_hidden_size = text_hidden;
  SetTokenIds(vocab, {{"<|audio>", &c.boa_token_id}, {"<|audio|>", &c.audio_token_id}, {"<audio|>", &c.eoa_token_id}});
  return Checked(c, r.path());
}

}  // namespace

float InverseSoftplus(float s) {
  double ulp = static_cast<double>(std::nextafter(s, std::numeric_limits<float>::infinity())) - s;
  if (!std::isfinite(ulp)) ulp = s - static_cast<double>(std::nextafter(s, 0.0f));  // s = FLT_MAX
  const double s_lo = s - 4 * ulp, s_hi = s + 4 * ulp;
  const double lo = s_lo > 0 ? InverseSoftplusExact(s_lo) : -std::numeric_limits<double>::infinity();
  const double hi = InverseSoftplusExact(s_hi);
  float lo32 = static_cast<float>(lo), hi32 = static_cast<float>(hi);
  if (lo32 < lo) lo32 = std::nextafter(lo32, std::numeric_limits<float>::infinity());
  if (hi32 > hi) hi32 = std::nextafter(hi32, -std::numeric_limits<float>::infinity());
  // A bf16 value in the window is the checkpoint's (Gemma 4's are bf16); else the nearest float.
  if (lo32 <= hi32) {
    const float simplest = Simplest(lo32, hi32);
    if ((Bits(simplest) & 0xFFFFu) == 0) return simplest;
  }
  return static_cast<float>(InverseSoftplusExact(s));
}

Result<MmprojTowers> ReadMmproj(const GgufFile& g, int64_t text_hidden, const Vocab& vocab) {
  ASSIGN_OR_RETURN(std::string arch, g.GetString("general.architecture"));
  if (arch != "clip") {
    return InvalidArgument(g.path() + ": general.architecture is '" + arch +
                           "', not clip: --mmproj takes llama.cpp's mmproj file of the vision/audio towers");
  }
  MmprojTowers t;
  Reader r(g, &t);
  bool has_vision = false, has_audio = false;
  if (g.Has("clip.has_vision_encoder")) {
    ASSIGN_OR_RETURN(has_vision, g.GetBool("clip.has_vision_encoder"));
  }
  if (g.Has("clip.has_audio_encoder")) {
    ASSIGN_OR_RETURN(has_audio, g.GetBool("clip.has_audio_encoder"));
  }
  if (!has_vision && !has_audio) {
    return InvalidArgument(g.path() + ": neither clip.has_vision_encoder nor clip.has_audio_encoder is true");
  }
  if (has_vision) {
    RETURN_IF_ERROR(r.CheckTower("vision", "gemma4v", text_hidden));
    ASSIGN_OR_RETURN(model::Gemma4VisionConfig c, VisionConfig(r, text_hidden, vocab));
    ASSIGN_OR_RETURN(t.vision_tensors, r.Items(model::ExpectedVisionTensors(c)));
    t.vision = c.ToJson();
  }
  if (has_audio) {
    RETURN_IF_ERROR(r.CheckTower("audio", "gemma4a", text_hidden));
    ASSIGN_OR_RETURN(model::Gemma4AudioConfig c, AudioConfig(r, text_hidden, vocab));
    ASSIGN_OR_RETURN(t.audio_tensors, r.Items(model::ExpectedAudioTensors(c)));
    t.audio = c.ToJson();
  }
  RETURN_IF_ERROR(r.CheckNoneLeft());
  return t;
}

Status AddMmproj(const std::string& path, Checkpoint* ck) {
  ASSIGN_OR_RETURN(ck->mmproj, GgufFile::Open(path));
  ASSIGN_OR_RETURN(MmprojTowers t, ReadMmproj(*ck->mmproj, ck->config.hidden_size, ck->tokenizer.vocab));
  ck->files.push_back(path);
  ck->vision_tensors = std::move(t.vision_tensors);
  ck->vision = std::move(t.vision);
  ck->audio_tensors = std::move(t.audio_tensors);
  ck->audio = std::move(t.audio);
  for (auto& b : t.owned) ck->owned.push_back(std::move(b));
  return Status::Ok();
}

}  // namespace gemlet::convert
