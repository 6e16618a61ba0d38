// Byte identity of every output over a corpus of jobs that together use
// every feature (dense GPT/Llama, MoE, MLA, Mamba-2 and Mamba-1 hybrids,
// tp/sp/cp allgather and ring, pp with each schedule and virtual stages,
// ep/etp, ZeRO 0-3, FSDP/HSDP,
// recompute modes, flash attention, tied embeddings with pp, rank orders,
// small DDP buckets). For each job it hashes (FNV-1a, 64 bit) what the CLI
// archive holds, every rank's .et bytes, comm_groups.json and
// summary.json, plus the graph text (`stagecraft graph`) and each
// stage's graph JSON (the browser's explanations), and compares the list
// with tests/golden/corpus_hashes.txt.
//
// A refactor must leave this file unchanged. The browser's zip holds the
// request layer's archive entries (archive_entry: the same per-rank bytes,
// groups and summary; tests/js checks the zip against the CLI's files byte
// for byte), so it is covered through these hashes.
// After an intended output change, regenerate and review the diff:
//   STAGECRAFT_UPDATE_GOLDEN=1 build/native/stagecraft_tests -tc='corpus*'
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "api/api.h"
#include "../test_jobs.h"

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// name, job JSON. Small layer counts and sequences keep it fast; the model
// sizes are the presets' (shapes are symbolic, so size costs nothing).
const std::vector<std::pair<std::string, std::string>>& corpus() {
  static const std::vector<std::pair<std::string, std::string>> jobs = {
      {"gpt-single", R"({"model":{"preset":"gpt3-1.7b","num_layers":1},
        "training":{"seq_len":64,"micro_batch_size":1}})"},
      {"gpt-tp2-dp2-sp", R"({"model":{"preset":"gpt3-1.7b","num_layers":2},
        "parallel":{"tp":2,"dp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":4}})"},
      {"gpt-tp2-selective", R"({"model":{"preset":"gpt3-1.7b","num_layers":2},
        "parallel":{"tp":2},"training":{"seq_len":64,"recompute":"selective"}})"},
      {"gpt-tp2-sp-full", R"({"model":{"preset":"gpt3-1.7b","num_layers":2},
        "parallel":{"tp":2,"sequence_parallel":true},"training":{"seq_len":64,"recompute":"full"}})"},
      {"gpt-pp2-tied-1f1b", R"({"model":{"preset":"gpt3-1.7b","num_layers":2},
        "parallel":{"pp":2,"dp":2},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":8,"schedule":"1f1b"}})"},
      {"gpt-pp2-gpipe", R"({"model":{"preset":"gpt3-1.7b","num_layers":2},
        "parallel":{"pp":2,"tp":2},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":4,"schedule":"gpipe"}})"},
      {"llama-pp2-interleaved", R"({"model":{"preset":"llama2-7b","num_layers":4},
        "parallel":{"pp":2,"virtual_stages":2,"tp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":4,"schedule":"interleaved-1f1b"}})"},
      {"llama-pp2-zero-bubble-layout", R"({"model":{"preset":"llama3-8b","num_layers":3},
        "parallel":{"pp":2,"dp":2,"pipeline_layout":[1,2]},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":8,"schedule":"zero-bubble"}})"},
      {"llama-gqa-tp2-dp2-full", R"({"model":{"preset":"llama3-8b","num_layers":2},
        "parallel":{"tp":2,"dp":2},
        "training":{"seq_len":64,"micro_batch_size":2,"global_batch_size":8,"recompute":"full"}})"},
      {"llama-flash-cp2-allgather", R"({"model":{"preset":"llama3-8b","num_layers":2,"flash_attention":true},
        "parallel":{"cp":2,"tp":2,"sequence_parallel":true},"training":{"seq_len":64}})"},
      {"llama-cp2-ring-dp2", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"cp":2,"dp":2,"cp_algorithm":"ring"},
        "training":{"seq_len":64,"global_batch_size":2}})"},
      {"llama-zero1-bf16-buckets", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"dp":4,"zero":1},
        "training":{"seq_len":64,"global_batch_size":4,"grad_reduce_dtype":"bf16","dp_bucket_mb":64,
                     "overlap_grad_reduce":true}})"},
      {"llama-zero2-tp2", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"dp":2,"tp":2,"zero":2},"training":{"seq_len":64,"global_batch_size":2}})"},
      {"llama-fsdp-zero3", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"dp":4,"zero":3},"training":{"seq_len":64,"global_batch_size":4}})"},
      {"llama-hsdp-cp2", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"dp":2,"cp":2,"zero":3,"shard_group":2},"training":{"seq_len":64,"global_batch_size":2}})"},
      // ZeRO 2 and HSDP ZeRO 3 with 3 micro-batches: every micro-batch's
      // gradients reduce-scattered (docs/parallelism.md).
      {"llama-zero2-accum3", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"dp":2,"zero":2},"training":{"seq_len":64,"global_batch_size":6,"overlap_grad_reduce":true}})"},
      {"llama-hsdp-zero3-accum3", R"({"model":{"preset":"llama2-7b","num_layers":2},
        "parallel":{"dp":4,"zero":3,"shard_group":2},"training":{"seq_len":64,"global_batch_size":12}})"},
      {"llama-order-llama3-pp2", R"({"model":{"preset":"llama3-8b","num_layers":2},
        "parallel":{"tp":2,"dp":2,"pp":2,"order":"llama3"},
        "training":{"seq_len":64,"global_batch_size":4}})"},
      {"llama-order-custom", R"({"model":{"preset":"llama3-8b","num_layers":1},
        "parallel":{"tp":2,"dp":2,"order":["dp","tp","cp","pp"]},
        "training":{"seq_len":64,"global_batch_size":2,"optimizer":"sgd"}})"},
      {"mixtral-tp2-ep2-sp", R"({"model":{"preset":"mixtral-8x7b","num_layers":2},
        "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2}})"},
      {"mixtral-etp1-ep4-zero1-pp2", R"({"model":{"preset":"mixtral-8x7b","num_layers":2,"capacity_factor":1.25},
        "parallel":{"tp":2,"dp":2,"ep":4,"expert_tp":1,"pp":2,"zero":1,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":4}})"},
      {"deepseek-mla-moe-cp2-ep2", R"({"model":{"preset":"deepseek-v3","num_layers":2,"first_dense_layers":1},
        "parallel":{"tp":2,"cp":2,"ep":2,"expert_tp":1,"sequence_parallel":true,"zero":1},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":1}})"},
      {"deepseek-mla-selective-ep2", R"({"model":{"preset":"deepseek-v3","num_layers":2,"first_dense_layers":1},
        "parallel":{"dp":2,"ep":2},
        "training":{"seq_len":64,"global_batch_size":2,"recompute":"selective"}})"},
      {"nemotron-mamba2-attn-tp2-pp2", R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"hybrid_pattern":"M*-M"},
        "parallel":{"tp":2,"pp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2}})"},
      {"jamba-mamba1-moe-ep2-zero1", R"({"model":{"preset":"jamba-v0.1","num_layers":10},
        "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true,"zero":1},
        "training":{"seq_len":64,"global_batch_size":2,"recompute":"selective"}})"},
      // FP8 training: delayed scaling (amax all-reduces over tp+cp+dp, FP8
      // sequence-parallel gathers) and current scaling.
      {"llama-fp8-delayed-tp2-cp2-dp2-pp2", R"({"model":{"preset":"llama3-8b","num_layers":2},
        "parallel":{"tp":2,"cp":2,"dp":2,"pp":2,"sequence_parallel":true},
        "training":{"seq_len":128,"global_batch_size":4,"fp8_recipe":"delayed"}})"},
      {"llama-fp8-tensorwise-tp2-sp", R"({"model":{"preset":"llama3-8b","num_layers":1},
        "parallel":{"tp":2,"dp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2,"fp8_recipe":"tensorwise"}})"},
  };
  return jobs;
}

// "<job> <output> <hash>" lines for one job.
std::string hash_lines(const std::string& name, const sc::Generator& g) {
  std::ostringstream out;
  auto line = [&](const std::string& what, const std::string& bytes) {
    out << name << " " << what << " " << hex(fnv1a(bytes)) << "\n";
  };
  for (int64_t r = 0; r < g.world_size(); ++r) {
    auto bytes = g.rank_trace_bytes(r);
    REQUIRE_MESSAGE(bytes.ok(), name << " rank " << r);
    line("trace." + std::to_string(r) + ".et", bytes.value());
  }
  line("comm_groups.json", g.groups_json());
  line("summary.json", g.summary_json());
  line("graph.txt", g.graph_text());
  for (int64_t st = 0; st < g.job().parallel.pp; ++st) {
    auto gj = g.graph_json(st);
    REQUIRE_MESSAGE(gj.ok(), name << " stage " << st);
    line("graph_json." + std::to_string(st), gj.value());
  }
  return out.str();
}

}  // namespace

TEST_CASE("corpus: every output of a corpus covering every feature is byte-identical to the recorded hashes") {
  std::string actual;
  for (const auto& [name, text] : corpus()) {
    CAPTURE(name);
    auto job = sc::parse_job(text);
    REQUIRE_MESSAGE(job.ok(), name << ": " << job.error().to_string());
    auto gen = sc::Generator::create(job.value());
    REQUIRE_MESSAGE(gen.ok(), name << ": " << gen.error().to_string());
    actual += hash_lines(name, gen.value());
  }
  const fs::path file = fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "golden" / "corpus_hashes.txt";
  if (std::getenv("STAGECRAFT_UPDATE_GOLDEN")) {
    std::ofstream(file, std::ios::binary) << actual;
    MESSAGE("updated " << file.string());
    return;
  }
  REQUIRE_MESSAGE(fs::exists(file), "missing " << file.string());
  const std::string want = sc::testing::slurp(file);
  // Name every differing output rather than printing two long lists.
  std::istringstream a(want), b(actual);
  std::string la, lb;
  int differing = 0;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    if (!ga || !gb || la != lb) {
      ++differing;
      if (differing <= 20) MESSAGE("expected: " << (ga ? la : "<none>") << "\n  actual:   " << (gb ? lb : "<none>"));
    }
  }
  CHECK_MESSAGE(differing == 0, differing << " output(s) differ from " << file.string());
  CHECK(want == actual);
}

TEST_CASE("corpus: a build on several threads gives every output of the one-thread build") {
  // Generator::CreateOptions::threads builds and lowers the pipeline stages
  // (and counts the budget estimate's stages) side by side, each into its
  // own slot: the bytes must not depend on it. The one-thread build is the
  // one the test above holds to the recorded hashes.
  int multi_stage = 0;
  for (const auto& [name, text] : corpus()) {
    auto job = sc::parse_job(text);
    REQUIRE_MESSAGE(job.ok(), name << ": " << job.error().to_string());
    if (job.value().parallel.pp < 2) continue;
    ++multi_stage;
    CAPTURE(name);
    auto one = sc::Generator::create(job.value());
    REQUIRE(one.ok());
    for (int threads : {2, 3}) {
      sc::Generator::CreateOptions o;
      o.threads = threads;
      auto many = sc::Generator::create(job.value(), o);
      REQUIRE_MESSAGE(many.ok(), name << ": " << many.error().to_string());
      CHECK(hash_lines(name, many.value()) == hash_lines(name, one.value()));
    }
  }
  CHECK(multi_stage >= 8);
}
