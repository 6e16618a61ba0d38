// graph_json(), rank_info_json(), rank_at() (core/api/explain.cc).
#include <map>
#include <set>
#include <string>

#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

namespace {
nlohmann::json parse(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  REQUIRE(!j.is_discarded());
  return j;
}
}  // namespace

TEST_CASE("explain: every collective has a why naming its axis") {
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    auto g = make(gpt_job(2, 256, 4, 2, 2, sp, 1, 64, 4));
    auto j = parse(g.graph_json());
    REQUIRE(j["ops"].size() > 0);
    REQUIRE(j["tensors"].size() > 0);
    int collectives = 0;
    std::set<std::string> kinds;
    for (const auto& op : j["ops"]) {
      CHECK(op.contains("phase"));
      CHECK(op["flops"].is_string());
      for (int t : op["inputs"]) CHECK(t < static_cast<int>(j["tensors"].size()));
      if (op["kind"] != "collective") continue;
      ++collectives;
      kinds.insert(op["collective"].get<std::string>());
      REQUIRE(op.contains("why"));
      const auto& w = op["why"];
      std::string axis = op["axis"];
      CHECK(w["axis"] == axis);
      std::string text = w["text"];
      CHECK(!text.empty());
      CHECK(text.find(axis) != std::string::npos);
      CHECK(w["from"] != w["to"]);
    }
    CHECK(collectives > 0);
    if (sp) {
      CHECK(kinds.count("reduce_scatter"));
      CHECK(kinds.count("all_gather"));
    }
  }
}

TEST_CASE("explain: SP reduce-scatter names the contraction and sequence parallelism") {
  auto g = make(gpt_job(1, 256, 4, 2, 1, true, 1, 64));
  auto j = parse(g.graph_json());
  bool found = false;
  for (const auto& op : j["ops"]) {
    if (op["kind"] != "collective" || op["collective"] != "reduce_scatter" || op["phase"] != "fwd") continue;
    std::string text = op["why"]["text"];
    if (text.find("partial sum over tp") != std::string::npos && text.find("contracts") != std::string::npos &&
        text.find("sequence parallelism") != std::string::npos)
      found = true;
  }
  CHECK(found);
}

TEST_CASE("explain: tensors carry local shapes and shardings") {
  auto g = make(gpt_job(1, 256, 4, 2, 2, false, 1, 64));
  auto j = parse(g.graph_json());
  bool tp_sharded = false;
  for (const auto& t : j["tensors"]) {
    CHECK(t["shape"].get<std::string>().front() == '[');
    if (t["shape"].get<std::string>().find("/tp") != std::string::npos) tp_sharded = true;
  }
  CHECK(tp_sharded);
  // Other axes (pp, ...) may be listed with degree 1; tp and dp must be there.
  std::map<std::string, int64_t> deg;
  for (const auto& a : j["axes"]) deg[a["name"].get<std::string>()] = a["degree"].get<int64_t>();
  CHECK(deg["tp"] == 2);
  CHECK(deg["dp"] == 2);
}

TEST_CASE("explain: rank_at inverts rank_info for every rank of a 2x3 job") {
  auto g = make(gpt_job(1, 256, 4, 2, 3, false, 1, 64));
  REQUIRE(g.world_size() == 6);
  for (int64_t r = 0; r < 6; ++r) {
    auto info = g.rank_info_json(r);
    REQUIRE(info.ok());
    auto j = parse(info.value());
    CHECK(j["rank"] == r);
    auto back = g.rank_at(j["coords"].dump());
    REQUIRE(back.ok());
    CHECK(back.value() == r);
    for (const auto& grp : j["groups"]) {
      bool member = false;
      for (auto m : grp["members"]) member |= m.get<int64_t>() == r;
      CHECK(member);
      CHECK(grp["key"].get<int64_t>() >= 1);
    }
  }
  auto info = parse(g.rank_info_json(3).value());
  CHECK(info["coords"]["tp"] == 1);
  CHECK(info["coords"]["dp"] == 1);
}

TEST_CASE("explain: bad ranks and coordinates are errors with paths") {
  auto g = make(gpt_job(1, 256, 4, 2, 3, false, 1, 64));
  CHECK(!g.rank_info_json(6).ok());
  CHECK(g.rank_info_json(-1).error().path == "rank");
  auto e = g.rank_at(R"({"tp": 2})");
  REQUIRE(!e.ok());
  CHECK(e.error().path == "coords.tp");
  CHECK(g.rank_at(R"({"zz": 0})").error().code == ErrorCode::kUnknownField);
  CHECK(g.rank_at("[1]").error().code == ErrorCode::kParseError);
  CHECK(g.rank_at("{}").value() == 0);
  CHECK(g.rank_at(R"({"tp": 1.5})").error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("explain: MoE all-to-alls say dispatch and combine; rank_info lists the expert groups") {
  // tp 2 (SP) x dp 4, ep 4, expert tp 1: edp = 8 / 4 = 2.
  auto job = parse_job(R"({"model": {"preset": "mixtral-8x7b", "num_layers": 1},
    "parallel": {"dp": 4, "tp": 2, "ep": 4, "expert_tp": 1, "sequence_parallel": true},
    "training": {"seq_len": 64, "global_batch_size": 4}})");
  REQUIRE_MESSAGE(job.ok(), job.error().to_string());
  auto g = make(job.value());
  auto j = parse(g.graph_json());
  int dispatch = 0, combine = 0, expert_bucket = 0;
  for (const auto& op : j["ops"]) {
    if (op["kind"] != "collective") continue;
    const std::string text = op["why"]["text"];
    if (op["collective"] == "all_to_all") {
      CHECK(op["axis"] == "ep");
      dispatch += text.find("MoE token dispatch") != std::string::npos;
      combine += text.find("MoE token combine") != std::string::npos;
    }
    if (op["axis"] == "edp") expert_bucket += text.find("expert weight gradient(s)") != std::string::npos;
  }
  // Forward and backward each move tokens out and back once per MoE layer.
  CHECK(dispatch == 2);
  CHECK(combine == 2);
  CHECK(expert_bucket >= 1);
  std::set<std::string> derived;
  for (const auto& a : j["axes"])
    if (a.value("derived", false)) derived.insert(a["name"].get<std::string>());
  CHECK(derived == std::set<std::string>{"edp", "ep", "etp"});

  // Rank 5 = tp 1, dp 2: stage-local index 5 read as etp(1) x ep(4) x edp(2)
  // gives ep coordinate 5 % 4 = 1 and edp coordinate 5 / 4 = 1.
  auto info = parse(g.rank_info_json(5).value());
  std::map<std::string, std::vector<int64_t>> members;
  for (const auto& grp : info["groups"]) members[grp["axis"]] = grp["members"].get<std::vector<int64_t>>();
  CHECK(members["ep"] == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(members["edp"] == std::vector<int64_t>{1, 5});
  CHECK(members.count("etp") == 0);  // degree 1: no group
}

TEST_CASE("explain: ZeRO, FSDP and HSDP collectives say what is sharded") {
  struct Case { int64_t zero, shard; std::vector<std::string> want; };
  const Case cases[] = {
      {1, 4, {"is reduce-scattered instead of all-reduced", "updated parameters are all-gathered"}},
      {3, 4, {"is reduce-scattered instead of all-reduced", "ZeRO-3 / FSDP"}},
      {2, 2, {"HSDP", "is reduce-scattered instead of all-reduced"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.zero);
    CAPTURE(c.shard);
    Job j = gpt_job(1, 256, 4, 1, 4, false, 1, 64);
    j.parallel.zero = c.zero;
    j.parallel.shard_group = c.shard;
    auto g = make(j);
    std::string all;
    const auto graph = parse(g.graph_json());  // kept: a range-for over a temporary's member dangles
    for (const auto& op : graph["ops"])
      if (op["kind"] == "collective" && op["why"]["reason"] == "zero") all += op["why"]["text"].get<std::string>() + "\n";
    for (const auto& w : c.want) CHECK_MESSAGE(all.find(w) != std::string::npos, w);
  }
}
