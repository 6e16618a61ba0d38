// Helpers for tests that drive the whole pipeline through the façade.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "check/replay.h"

namespace sc::testing {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Job gpt_job(int64_t L, int64_t h, int64_t a, int64_t tp, int64_t dp, bool sp, int64_t b, int64_t s,
                   int64_t B = 0) {
  Job j;
  j.model.name = "test-gpt";
  j.model.num_layers = L;
  j.model.hidden = h;
  j.model.num_heads = a;
  j.model.num_kv_heads = a;
  j.model.head_dim = h / a;
  j.model.ffn_hidden = 4 * h;
  j.model.vocab = 51200;
  j.model.max_positions = s;
  j.parallel.tp = tp;
  j.parallel.dp = dp;
  j.parallel.sequence_parallel = sp;
  j.training.seq_len = s;
  j.training.micro_batch_size = b;
  j.training.global_batch_size = B ? B : b * dp;
  j.hardware = hardware_preset("h100").value();
  return j;
}

inline Generator make(const Job& j) {
  auto g = Generator::create(j);
  if (!g.ok()) FAIL(g.error().to_string());
  return std::move(g).value();
}

inline nlohmann::json summary(const Generator& g) {
  auto j = nlohmann::json::parse(g.summary_json(), nullptr, false);
  REQUIRE(!j.is_discarded());
  return j;
}

// Replays every rank together (core/check/replay.h) and expects every node
// to finish; prints the hangs otherwise.
inline void check_runs_to_completion(const Generator& g) {
  std::vector<RankTrace> ranks;
  for (int64_t r = 0; r < g.world_size(); ++r) ranks.push_back(g.rank_trace(r).value());
  auto res = replay_traces(ranks, g.groups());
  for (const auto& p : res.problems) MESSAGE(p);
  CHECK(res.completed);
}

}  // namespace sc::testing
