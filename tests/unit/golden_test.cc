// Golden files: for each tests/golden/cases/<name>.json (a job), the
// canonical graph text and the canonical dump of rank 0's trace must equal
// tests/golden/expected/<name>.graph.txt and <name>.rank0.txt byte for
// byte. After an intended change, rebaseline with
//   STAGECRAFT_UPDATE_GOLDEN=1 build/native/stagecraft_tests -tc='golden*'
// and review the diff like code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_jobs.h"
#include "api/api.h"
#include "emit/chakra_writer.h"
#include "graph/autodiff.h"
#include "model/transformer.h"
#include "parallel/propagate.h"

namespace fs = std::filesystem;

namespace {

using sc::testing::slurp;

void check_golden(const fs::path& expected, const std::string& actual) {
  if (std::getenv("STAGECRAFT_UPDATE_GOLDEN")) {
    std::ofstream(expected, std::ios::binary) << actual;
    MESSAGE("updated " << expected.string());
    return;
  }
  REQUIRE_MESSAGE(fs::exists(expected), "missing golden " << expected.string());
  std::string want = slurp(expected);
  if (want == actual) return;
  // Report the first differing line rather than two huge strings.
  std::istringstream a(want), b(actual);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL_CHECK(expected.filename().string() << " differs at line " << line << "\n  expected: " << la
                                          << "\n  actual:   " << lb);
}

}  // namespace

TEST_CASE("golden: graphs and rank traces of the reference cases") {
  const fs::path root = fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "golden";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root / "cases"))
    if (e.path().extension() == ".json") cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 3);
  for (const auto& c : cases) {
    CAPTURE(c.string());
    auto job = sc::parse_job(slurp(c));
    REQUIRE_MESSAGE(job.ok(), job.error().to_string());
    auto gen = sc::Generator::create(job.value());
    REQUIRE_MESSAGE(gen.ok(), gen.error().to_string());
    const std::string name = c.stem().string();
    check_golden(root / "expected" / (name + ".graph.txt"), gen->graph_text());
    auto bytes = gen->rank_trace_bytes(0);
    REQUIRE(bytes.ok());
    auto text = sc::dump_chakra_trace(bytes.value());
    REQUIRE(text.ok());
    check_golden(root / "expected" / (name + ".rank0.txt"), text.value());
    check_golden(root / "expected" / (name + ".groups.json"), gen->groups_json());
  }
}

// Per-pass goldens keyed by stable names (graph_to_named_text): the
// forward graph as built, after autodiff, and after sharding propagation,
// for dense single-stage jobs (tp/dp/sp, no experts: the options below are
// what Generator::create passes for them). The later passes are covered by
// the cases above (<name>.graph.txt: after buckets and ZeRO; rank0.txt:
// the lowered and scheduled rank trace, nodes named by op). Rebaseline as
// above; a diff names the ops and tensors a change touches.
TEST_CASE("golden: per-pass graphs keyed by stable names") {
  const fs::path root = fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "golden";
  const std::pair<const char*, const char*> cases[] = {
      {"gpt-tp2-dp2-sp", R"({"model":{"preset":"gpt3-1.7b","num_layers":1},
        "parallel":{"tp":2,"dp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2,"recompute":"selective"}})"},
      {"hybrid-tp2-sp", R"({"model":{"preset":"nemotron-h-8b","num_layers":3,"hybrid_pattern":"M*-"},
        "parallel":{"tp":2,"sequence_parallel":true},"training":{"seq_len":64}})"},
      // Jamba's Mamba-1 mixer (experts off: the per-pass cases are dense).
      {"mamba1-tp2-sp", R"({"model":{"preset":"jamba-v0.1","num_layers":2,"hybrid_pattern":"S-","num_experts":0,
        "experts_per_token":0,"moe_ffn_hidden":0},
        "parallel":{"tp":2,"sequence_parallel":true},"training":{"seq_len":64}})"},
  };
  for (const auto& [name, text] : cases) {
    CAPTURE(name);
    auto job = sc::parse_job(text);
    REQUIRE_MESSAGE(job.ok(), job.error().to_string());
    const sc::ParallelConfig& p = job->parallel;
    REQUIRE(p.pp == 1);
    REQUIRE(p.cp == 1);
    REQUIRE(!job->model.is_moe());
    sc::BuildOptions bo;
    bo.has_tp = p.tp > 1;
    bo.has_dp = p.dp > 1;
    bo.sequence_parallel = p.sequence_parallel && bo.has_tp;
    bo.dtype = job->training.dtype;
    sc::Graph g = sc::build_transformer_forward(job->model, bo);
    const std::string base = std::string("passes/") + name;
    check_golden(root / (base + ".1-forward.txt"), sc::graph_to_named_text(g, "# forward"));
    sc::AutodiffOptions ao;
    ao.grad_dtype = job->training.grad_reduce_dtype;
    ao.recompute = job->training.recompute == sc::Recompute::kSelective ? sc::RecomputeMode::kSelective
                   : job->training.recompute == sc::Recompute::kFull    ? sc::RecomputeMode::kFull
                                                                        : sc::RecomputeMode::kNone;
    sc::append_backward_and_optimizer(g, ao);
    check_golden(root / (base + ".2-autodiff.txt"), sc::graph_to_named_text(g, "# after autodiff"));
    sc::PropagationOptions po;
    po.sequence_parallel = bo.sequence_parallel;
    if (bo.has_dp) po.axes_outer_first.push_back("dp");
    if (bo.has_tp) po.axes_outer_first.push_back("tp");
    po.kept_gather_axes = {"etp"};
    sc::propagate_shardings(g, po);
    check_golden(root / (base + ".3-propagated.txt"), sc::graph_to_named_text(g, "# after propagation"));
  }
}
