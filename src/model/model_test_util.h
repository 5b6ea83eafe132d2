// Tests only: the oracle's tiny-e2b text config, and the simplest KvStore — every layer's rows
// contiguous, no ring — reporting its rows as `type`: f32 and f16 rows are kept in f32 (the
// forward pass rounds them to f16 values before committing), q8 rows as the blocks a KV cache
// holds (ops::QuantizeKvRowQ8).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "model/gemma4_config.h"
#include "model/kv_store.h"

namespace gemlet::model {

// ../shared/oracle/tiny-e2b/config.json's text_config.
inline Gemma4Config TinyConfig() {
  std::ifstream in(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/config.json");
  auto c = Gemma4Config::FromJson(nlohmann::json::parse(in)["text_config"]);
  EXPECT_TRUE(c.ok());
  return *c;
}

class ContiguousStore : public KvStore {
 public:
  ContiguousStore(const Gemma4Config& c, int64_t limit, TensorType type = TensorType::kF32)
      : c_(c), limit_(limit), type_(type), k_(c.num_layers), v_(c.num_layers), k8_(c.num_layers),
        v8_(c.num_layers) {}
  int64_t size() const override { return n_; }
  Status Reserve(int64_t end) override {
    if (end > limit_) return OutOfRange("store limit " + std::to_string(limit_));
    for (int64_t l = 0; l < c_.num_layers; ++l) {
      if (type_ == TensorType::kQ8) {
        k8_[l].resize(end * c_.kv_dim(l) / kQBlock);
        v8_[l].resize(end * c_.kv_dim(l) / kQBlock);
      } else {
        k_[l].resize(end * c_.kv_dim(l));
        v_[l].resize(end * c_.kv_dim(l));
      }
    }
    return Status::Ok();
  }
  int Past(int64_t l, ops::KvSegment out[2]) const override {
    if (n_ == 0) return 0;
    if (type_ == TensorType::kQ8) {
      out[0] = ops::KvSegment{k8_[l].data(), v8_[l].data(), c_.kv_dim(l), 0, n_, TensorType::kQ8};
    } else {
      out[0] = ops::KvSegment{k_[l].data(), v_[l].data(), c_.kv_dim(l), 0, n_};
    }
    return 1;
  }
  void Commit(int64_t l, const float* k, const float* v, int64_t T) override {
    const int64_t row = c_.kv_dim(l);
    if (type_ == TensorType::kQ8) {
      ops::QuantizeKvRowQ8(k, k8_[l].data() + n_ * row / kQBlock, T * row);
      ops::QuantizeKvRowQ8(v, v8_[l].data() + n_ * row / kQBlock, T * row);
    } else {
      std::copy(k, k + T * row, k_[l].begin() + n_ * row);
      std::copy(v, v + T * row, v_[l].begin() + n_ * row);
    }
    ++commits_;
  }
  void Advance(int64_t T) override { n_ += T; }
  TensorType row_type(int64_t /*layer*/) const override { return type_; }
  int commits_ = 0;

 private:
  Gemma4Config c_;
  int64_t limit_;
  TensorType type_;
  int64_t n_ = 0;
  std::vector<std::vector<float>> k_, v_;
  std::vector<std::vector<BlockQ8>> k8_, v8_;
};

}  // namespace gemlet::model
