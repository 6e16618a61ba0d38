// The fast export path (emit/trace_template.h, api/export.h) writes exactly
// the bytes of the reference path (instantiate_rank + write_chakra_trace via
// Generator::rank_trace_bytes) for every rank of every golden job and of
// larger layouts, and rejects bad per-rank values like the writer does.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/api.h"
#include "api/export.h"
#include "emit/chakra_writer.h"
#include "emit/trace_template.h"
#include "../test_jobs.h"

namespace fs = std::filesystem;

namespace sc {
namespace {

using testing::slurp;

void check_all_ranks(const Generator& g) {
  auto enc = RankEncoder::create(g);
  REQUIRE_MESSAGE(enc.ok(), enc.error().to_string());
  CHECK(enc->fast());
  CHECK(enc->world_size() == g.world_size());
  RankEncoder::Scratch scratch;
  for (int64_t r = 0; r < g.world_size(); ++r) {
    auto ref = g.rank_trace_bytes(r);
    REQUIRE(ref.ok());
    auto fast = enc->encode(r, &scratch);
    REQUIRE(fast.ok());
    if (*fast != std::string_view(*ref)) FAIL("rank " << r << " differs from the reference writer");
  }
  CHECK_FALSE(enc->encode(-1, &scratch).ok());
  CHECK_FALSE(enc->encode(g.world_size(), &scratch).ok());
}

TEST_CASE("export: fast rank encoder equals the reference writer on every golden job, every rank") {
  const fs::path root = fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "golden" / "cases";
  int n = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.path().extension() != ".json") continue;
    CAPTURE(e.path().string());
    auto job = parse_job(slurp(e.path()));
    REQUIRE(job.ok());
    auto gen = Generator::create(*job);
    REQUIRE(gen.ok());
    check_all_ranks(*gen);
    ++n;
  }
  CHECK(n >= 3);
}

TEST_CASE("export: fast rank encoder on wider layouts (multi-byte varints in group keys and ranks)") {
  // 256 ranks: group keys and ranks past 127 need two-byte varints and
  // three-digit pg_names.
  check_all_ranks(testing::make(testing::gpt_job(2, 256, 8, 4, 64, true, 1, 128)));
  check_all_ranks(testing::make(testing::gpt_job(1, 256, 8, 8, 20, false, 1, 64, 40)));
}

TEST_CASE("export: fast rank encoder on pipeline-parallel jobs (one role per stage, send/recv peers)") {
  for (const char* j : {
           R"({"model":{"preset":"gpt3-1.7b","num_layers":4},"parallel":{"tp":2,"dp":2,"pp":2},"training":{"seq_len":256,"global_batch_size":8}})",
           R"({"model":{"preset":"gpt3-1.7b","num_layers":8},"parallel":{"tp":2,"dp":3,"pp":4},"training":{"seq_len":128,"global_batch_size":24}})",
           // ring attention: peers along the cp ring, next to pipeline peers
           R"({"model":{"preset":"llama3-8b","num_layers":4},"parallel":{"tp":2,"cp":4,"pp":2,"cp_algorithm":"ring"},"training":{"seq_len":256,"global_batch_size":4}})",
           R"({"model":{"preset":"llama3-8b","num_layers":4},"parallel":{"dp":2,"cp":2,"zero":3},"training":{"seq_len":256,"global_batch_size":4}})",
       }) {
    CAPTURE(j);
    auto job = parse_job(j);
    REQUIRE_MESSAGE(job.ok(), job.error().to_string());
    Generator g = testing::make(*job);
    auto enc = RankEncoder::create(g);
    REQUIRE(enc.ok());
    CHECK(enc->num_roles() == static_cast<size_t>(job->parallel.pp));
    check_all_ranks(g);
  }
}

TEST_CASE("export: TraceTemplate checks per-rank values and handles send/recv") {
  RankTrace t;
  t.rank = 1;
  TraceNode c;
  c.id = 0;
  c.name = "c";
  c.num_ops = 5;
  c.tensor_size = 9;
  c.duration_micros = 3;
  TraceNode ar;
  ar.id = 1;
  ar.name = "ar";
  ar.kind = TraceNodeKind::kCollective;
  ar.comm_size = 1 << 20;
  ar.group = 3;
  ar.deps = {0};
  TraceNode s;
  s.id = 2;
  s.name = "send";
  s.kind = TraceNodeKind::kSend;
  s.peer = 2;
  s.tag = 7;
  s.comm_size = 4096;
  s.deps = {1};
  TraceNode r = s;
  r.id = 3;
  r.name = "recv";
  r.kind = TraceNodeKind::kRecv;
  r.peer = 0;
  r.tag = 200;
  r.deps = {};
  t.nodes = {c, ar, s, r, c};
  t.nodes.back().id = 4;
  TraceMetadata meta;
  meta.generator_version = "0.1.0";
  meta.config_hash = "abc";
  meta.world_size = 300;
  auto tmpl = TraceTemplate::create(t, meta);
  REQUIRE_MESSAGE(tmpl.ok(), tmpl.error().to_string());
  REQUIRE(tmpl->hole_nodes() == std::vector<uint32_t>{1, 2, 3});

  for (int64_t rank : {int64_t{0}, int64_t{1}, int64_t{127}, int64_t{128}, int64_t{299}}) {
    for (int64_t group : {int64_t{1}, int64_t{9}, int64_t{10}, int64_t{127}, int64_t{128}, int64_t{99999}, int64_t{123456789012}}) {
      for (int32_t peer : {0, 127, 128, 299}) {
        RankTrace v = t;
        v.rank = rank;
        v.nodes[1].group = group;
        v.nodes[2].peer = peer;
        v.nodes[3].peer = 299 - peer;
        v.nodes[3].tag = peer * 1000;
        std::string want;
        REQUIRE(write_chakra_trace(v, meta, &want).ok());
        std::vector<TraceNode> holes = {v.nodes[1], v.nodes[2], v.nodes[3]};
        std::string got = "x";
        REQUIRE(tmpl->append(rank, holes, &got).ok());
        CHECK(got.size() <= 1 + tmpl->max_size());
        if (got.substr(1) != want) FAIL("rank " << rank << " group " << group << " peer " << peer);
      }
    }
  }
  std::vector<TraceNode> holes = {t.nodes[1], t.nodes[2], t.nodes[3]};
  std::string out = "keep";
  holes[0].group = 0;
  CHECK_FALSE(tmpl->append(1, holes, &out).ok());
  holes[0].group = 1;
  holes[1].peer = 300;
  CHECK_FALSE(tmpl->append(1, holes, &out).ok());
  holes[1].peer = -1;
  CHECK_FALSE(tmpl->append(1, holes, &out).ok());
  holes[1].peer = 0;
  holes[2].tag = -1;
  CHECK_FALSE(tmpl->append(1, holes, &out).ok());
  holes[2].tag = 0;
  CHECK_FALSE(tmpl->append(300, holes, &out).ok());
  CHECK_FALSE(tmpl->append(1, {holes[0]}, &out).ok());
  CHECK(out == "keep");
  CHECK(tmpl->append(1, holes, &out).ok());

  // A bad trace is rejected like the writer rejects it.
  RankTrace bad = t;
  bad.nodes[1].deps = {7};
  CHECK_FALSE(TraceTemplate::create(bad, meta).ok());
}

}  // namespace
}  // namespace sc
