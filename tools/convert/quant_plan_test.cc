#include "tools/convert/quant_plan.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace gemlet::convert {
namespace quant_plan_test {

using model::TensorClass;

TEST(QuantPlan, DefaultKeepQ8) {
  auto d = MakeQuantPlan("default", {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(PlanType(*d, TensorClass::kAttention, TensorType::kBF16), TensorType::kQ4);
  EXPECT_EQ(PlanType(*d, TensorClass::kFeedForward, TensorType::kBF16), TensorType::kQ4);
  EXPECT_EQ(PlanType(*d, TensorClass::kTokenEmbedding, TensorType::kBF16), TensorType::kQ4);
  EXPECT_EQ(PlanType(*d, TensorClass::kPleTable, TensorType::kBF16), TensorType::kQ4);
  EXPECT_EQ(PlanType(*d, TensorClass::kPleModelProj, TensorType::kF32), TensorType::kQ8);
  EXPECT_EQ(PlanType(*d, TensorClass::kPleGate, TensorType::kBF16), TensorType::kQ4);
  EXPECT_EQ(PlanType(*d, TensorClass::kPleProj, TensorType::kBF16), TensorType::kQ4);
  EXPECT_EQ(PlanType(*d, TensorClass::kNorm, TensorType::kBF16), TensorType::kF32);
  EXPECT_EQ(PlanType(*d, TensorClass::kScalar, TensorType::kBF16), TensorType::kF32);

  auto k = MakeQuantPlan("keep", {});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(PlanType(*k, TensorClass::kAttention, TensorType::kBF16), TensorType::kBF16);
  EXPECT_EQ(PlanType(*k, TensorClass::kAttention, TensorType::kQ8), TensorType::kQ8);
  EXPECT_EQ(PlanType(*k, TensorClass::kNorm, TensorType::kF32), TensorType::kF32);
  // K-quant sources have no gemlet type: the default plan's type for the class.
  EXPECT_EQ(PlanType(*k, TensorClass::kTokenEmbedding, std::nullopt), TensorType::kQ4);
  EXPECT_EQ(PlanType(*k, TensorClass::kPleGate, std::nullopt), TensorType::kQ4);

  auto q = MakeQuantPlan("q8", {});
  ASSERT_TRUE(q.ok());
  for (TensorClass c :
       {TensorClass::kAttention, TensorClass::kFeedForward, TensorClass::kTokenEmbedding,
        TensorClass::kPleTable, TensorClass::kPleModelProj, TensorClass::kPleGate, TensorClass::kPleProj}) {
    EXPECT_EQ(PlanType(*q, c, TensorType::kBF16), TensorType::kQ8);
  }
  EXPECT_EQ(PlanType(*q, TensorClass::kNorm, TensorType::kBF16), TensorType::kF32);

  auto q4 = MakeQuantPlan("q4", {});
  ASSERT_TRUE(q4.ok());
  for (TensorClass c :
       {TensorClass::kAttention, TensorClass::kFeedForward, TensorClass::kTokenEmbedding,
        TensorClass::kPleTable, TensorClass::kPleModelProj, TensorClass::kPleGate, TensorClass::kPleProj}) {
    EXPECT_EQ(PlanType(*q4, c, TensorType::kBF16), TensorType::kQ4);
  }
  EXPECT_EQ(PlanType(*q4, TensorClass::kNorm, TensorType::kBF16), TensorType::kF32);
  EXPECT_EQ(PlanType(*q4, TensorClass::kScalar, TensorType::kF32), TensorType::kF32);
}

TEST(QuantPlan, Overrides) {
  auto p = MakeQuantPlan("keep", {"ple_table=q8", "attn=q4", "attn=bf16"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(PlanType(*p, TensorClass::kPleTable, TensorType::kBF16), TensorType::kQ8);
  EXPECT_EQ(PlanType(*p, TensorClass::kAttention, TensorType::kQ4), TensorType::kBF16);  // last wins
  EXPECT_EQ(PlanType(*p, TensorClass::kFeedForward, TensorType::kQ4), TensorType::kQ4);
  for (const char* bad : {"attn", "attn=q3", "mlp=q8", "scalar=q8", "=q8"}) {
    auto r = MakeQuantPlan("default", {bad});
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(MakeQuantPlan("q5", {}).ok());
}

// The full-size E2B under the default plan (spec §1.1 shapes) must stay below 2.7 GB.
TEST(QuantPlan, DefaultPlanE2BSize) {
  model::Gemma4Config c;
  c.vocab_size = c.vocab_size_per_layer_input = 262144;
  c.hidden_size = 1536;
  c.num_layers = 35;
  c.num_heads = 8;
  c.num_kv_heads = 1;
  c.head_dim = 256;
  c.global_head_dim = 512;
  c.intermediate_size = 6144;
  c.use_double_wide_mlp = true;
  c.hidden_size_per_layer_input = 256;
  c.sliding_window = 512;
  c.num_kv_shared_layers = 20;
  for (int l = 0; l < 35; ++l)
    c.layer_types.push_back(l % 5 == 4 ? model::AttnType::kFull : model::AttnType::kSliding);
  ASSERT_TRUE(c.Validate().ok());
  auto plan = MakeQuantPlan("default", {});
  ASSERT_TRUE(plan.ok());
  uint64_t total = 0, params = 0;
  for (const auto& spec : model::ExpectedTensors(c)) {
    auto b = StoredBytes(PlanType(*plan, spec.cls, TensorType::kBF16), spec.shape);
    ASSERT_TRUE(b.ok()) << spec.name;
    total += *b;
    uint64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    params += n;
  }
  std::printf("E2B default plan: %llu parameters, %llu bytes of tensors\n",
              static_cast<unsigned long long>(params), static_cast<unsigned long long>(total));
  EXPECT_LT(total, 2'700'000'000ull);
  EXPECT_GT(total, 2'500'000'000ull);
}

TEST(QuantPlan, StoredBytes) {
  EXPECT_EQ(*StoredBytes(TensorType::kQ4, {3, 64}), 3u * 2 * 18);
  EXPECT_EQ(*StoredBytes(TensorType::kF32, {1}), 4u);
  EXPECT_FALSE(StoredBytes(TensorType::kQ8, {2, 48}).ok());
}

}  // namespace quant_plan_test
}  // namespace gemlet::convert
