// gemlet bench --draft-p LIST: speculative decoding's speed against plain decoding in the same
// run (issue #16's bench mode). A random-weight model's drafts are never accepted, so each
// draft is replaced with probability p by the target's own greedy continuation (computed
// first, by the plain run), while the drafter still runs every step (runtime::
// SpeculativeOptions::oracle). Reports, per p, decode tok/s and its ratio to plain decoding
// (the median over repetitions of the ratio within each repetition; the tests go round in
// turns), the acceptance rate and drafts accepted per round; and the cost of one MTP draft
// step and of a verify pass of widths 1 … 8, relative to one decode step (width 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/speculative_options.h"

namespace gemlet::cli {

struct SpeculativeBenchOptions {
  std::vector<double> p;      // the replacement probabilities
  int64_t n_prompt = 64;      // random prompt tokens
  int64_t n_gen = 128;        // generated tokens per run
  int64_t reps = 3;
  runtime::SpeculativeOptions spec;  // mode, K, adaptive
  bool json = false;
};

// Runs the measurements on `engine` and prints them (a table, or JSON); the exit code.
int RunSpeculativeBench(const runtime::Engine& engine, const std::string& model, const SpeculativeBenchOptions& o);

}  // namespace gemlet::cli
