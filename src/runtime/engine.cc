#include "runtime/engine.h"

#include <algorithm>

#include "runtime/kv_cache.h"

namespace gemlet::runtime {

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& path, const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->options_ = options;
  ASSIGN_OR_RETURN(e->file_, GemletFile::Open(path));
  ASSIGN_OR_RETURN(e->model_, model::Gemma4Model::Bind(*e->file_));
  // q8 rows need heads of whole blocks
  RETURN_IF_ERROR(CheckKvType(e->config(), e->kv_type(), /*full=*/true));
  RETURN_IF_ERROR(CheckKvType(e->config(), e->kv_type_sliding(), /*full=*/false));
  if (!options.drafter_path.empty()) {
    ASSIGN_OR_RETURN(e->drafter_file_, GemletFile::Open(options.drafter_path));
    ASSIGN_OR_RETURN(e->drafter_, model::Gemma4Drafter::Bind(*e->drafter_file_));
  } else if (model::Gemma4Drafter::InFile(*e->file_)) {
    ASSIGN_OR_RETURN(e->drafter_, model::Gemma4Drafter::Bind(*e->file_));
  }
  if (e->drafter_) RETURN_IF_ERROR(e->drafter_->CheckFits(*e->model_));
  if (e->file_->has_vocab()) {
    auto tok = Tokenizer::FromGemlet(*e->file_);
    if (!tok.ok()) return tok.status();
    e->tokenizer_ = std::make_unique<Tokenizer>(std::move(*tok));
  }
  e->pool_ = std::make_unique<ThreadPool>(options.threads);
  if (options.decode_threads > 0 && options.decode_threads != e->pool_->num_threads()) {
    e->decode_pool_ = std::make_unique<ThreadPool>(options.decode_threads);
  }
  // The per-layer-embedding table (1.3 GB at q4 on E2B) is only gathered, one row per token:
  // no read-ahead, so the resident set holds the rows used, not their neighbours.
  if (const MappedFile* map = e->file_->mapping()) {
    if (const TensorView* t = e->file_->Find("per_layer_token_embd")) {
      map->AdviseRandom(static_cast<size_t>(t->offset), static_cast<size_t>(t->nbytes));
    }
  }

  e->eog_ids_ = {1, 106, 50};
  const auto& meta = e->file_->metadata();
  auto tok = meta.find("tokenizer");
  if (tok != meta.end() && tok->is_object()) {
    auto eog = tok->find("eog_ids");
    if (eog != tok->end()) {
      if (!eog->is_array()) return Corrupt(path + ": metadata tokenizer.eog_ids is not an array");
      e->eog_ids_.clear();
      for (const auto& id : *eog) {
        if (!id.is_number_integer())
          return Corrupt(path + ": metadata tokenizer.eog_ids holds a non-integer");
        e->eog_ids_.push_back(id.get<int32_t>());
      }
    }
    auto bos = tok->find("bos_id");
    if (bos != tok->end() && bos->is_number_integer()) e->bos_id_ = bos->get<int32_t>();
  }
  return e;
}

bool Engine::IsEog(int32_t id) const {
  return std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

}  // namespace gemlet::runtime
