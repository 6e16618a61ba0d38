// graph_json(stage), rank_info_json(), rank_at() (core/api/explain.cc).
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

// graph_json(stage), which must succeed, parsed.
nlohmann::json graph_of(const Generator& g, int64_t stage = 0) {
  auto r = g.graph_json(stage);
  REQUIRE_MESSAGE(r.ok(), r.error().to_string());
  return parse(r.value());
}

std::set<int64_t> layers_of_ops(const nlohmann::json& j) {
  std::set<int64_t> out;
  for (const auto& op : j["ops"])
    if (op["layer"].get<int64_t>() >= 0) out.insert(op["layer"].get<int64_t>());
  return out;
}

bool has_op_kind(const nlohmann::json& j, const std::string& kind) {
  for (const auto& op : j["ops"])
    if (op["kind"] == kind) return true;
  return false;
}
}  // namespace

TEST_CASE("explain: every collective has a why naming its axis") {
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    auto g = make(gpt_job(2, 256, 4, 2, 2, sp, 1, 64, 4));
    auto j = graph_of(g);
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

TEST_CASE("explain: a gather's why gives a reason or none, never the need as its own reason (issue 25)") {
  // cp 2 all-gathers K and V over cp (Llama 3's context parallelism): the
  // sentence once read "needs c whole because it needs c whole".
  for (const char* alg : {"allgather", "ring"}) {
    CAPTURE(alg);
    auto g = generator_from_json(std::string(R"({"model": {"preset": "gpt3-1.7b", "num_layers": 1},
      "parallel": {"cp": 2, "cp_algorithm": ")") + alg + R"("}, "training": {"seq_len": 256, "global_batch_size": 1}})");
    auto j = graph_of(g);
    int cp_gathers = 0;
    for (const auto& op : j["ops"]) {
      if (op["kind"] != "collective") continue;
      std::string text = op["why"]["text"];
      CHECK_MESSAGE(text.find("because it needs") == std::string::npos, text);
      if (op["axis"] == "cp" && op["collective"] == "all_gather") {
        ++cp_gathers;
        CHECK_MESSAGE(text.find("keys and values of the whole sequence") != std::string::npos, text);
      }
    }
    if (std::string(alg) == "allgather") CHECK(cp_gathers > 0);
  }
}

TEST_CASE("explain: SP reduce-scatter names the contraction and sequence parallelism") {
  auto g = make(gpt_job(1, 256, 4, 2, 1, true, 1, 64));
  auto j = graph_of(g);
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
  auto j = graph_of(g);
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
  auto j = graph_of(g);
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
    const auto graph = graph_of(g);  // kept: a range-for over a temporary's member dangles
    for (const auto& op : graph["ops"])
      if (op["kind"] == "collective" && op["why"]["reason"] == "zero") all += op["why"]["text"].get<std::string>() + "\n";
    for (const auto& w : c.want) CHECK_MESSAGE(all.find(w) != std::string::npos, w);
  }
}

TEST_CASE("explain: graph_json(stage) is the graph of that pipeline stage") {
  // 4 layers, tp 2 x pp 2: stage 0 holds layers 0-1 and the embedding,
  // stage 1 layers 2-3, the output layer and the loss.
  Job job = gpt_job(4, 256, 4, 2, 1, true, 1, 64, 4);
  job.parallel.pp = 2;
  auto g = make(job);
  const auto s0 = graph_of(g, 0), s1 = graph_of(g, 1);
  CHECK(graph_of(g).dump() == s0.dump());  // the default is stage 0
  CHECK(s0["stage"] == 0);
  CHECK(s1["stage"] == 1);
  CHECK(s0["num_stages"] == 2);
  CHECK(s1["num_stages"] == 2);
  CHECK(s1["num_layers"] == 4);  // the model's, not the stage's
  CHECK(s0["ranks_per_stage"] == 2);
  CHECK(s0["first_layer"] == 0);
  CHECK(s0["last_layer"] == 1);
  CHECK(s1["first_layer"] == 2);
  CHECK(s1["last_layer"] == 3);
  CHECK(s0["layers"].get<std::vector<int64_t>>() == std::vector<int64_t>{0, 1});
  CHECK(s1["layers"].get<std::vector<int64_t>>() == std::vector<int64_t>{2, 3});
  CHECK(layers_of_ops(s0) == std::set<int64_t>{0, 1});
  CHECK(layers_of_ops(s1) == std::set<int64_t>{2, 3});
  CHECK(s0["has_embedding"] == true);
  CHECK(s0["has_loss"] == false);
  CHECK(s1["has_embedding"] == false);
  CHECK(s1["has_loss"] == true);
  CHECK(has_op_kind(s1, "loss"));
  CHECK(!has_op_kind(s0, "loss"));
  CHECK(has_op_kind(s0, "embedding"));
  CHECK(!has_op_kind(s1, "embedding"));
  REQUIRE(s1["chunks"].size() == 1);
  CHECK(s1["chunks"][0]["virtual_stage"] == 1);
  CHECK(s1["chunks"][0]["has_loss"] == true);
  // Every stage's layers, from any stage (to label a stage picker).
  REQUIRE(s0["stages"].size() == 2);
  CHECK(s0["stages"] == s1["stages"]);
  CHECK(s0["stages"][1]["layers"] == s1["layers"]);
  CHECK(s0["stages"][1]["has_loss"] == true);

  // Every why of stage 1 speaks of stage 1's ops and tensors.
  std::map<int64_t, std::string> op_name;
  std::set<std::string> op_names, tensor_names;
  for (const auto& op : s1["ops"]) {
    op_name[op["id"].get<int64_t>()] = op["name"];
    op_names.insert(op["name"].get<std::string>());
  }
  for (const auto& t : s1["tensors"]) tensor_names.insert(t["name"].get<std::string>());
  int collectives = 0, in_layers = 0;
  for (const auto& op : s1["ops"]) {
    if (op["kind"] != "collective") continue;
    ++collectives;
    const auto& w = op["why"];
    CAPTURE(op["name"].get<std::string>());
    CHECK(tensor_names.count(w["tensor"].get<std::string>()));
    const int64_t pid = w["producer_id"];
    if (pid >= 0) {
      REQUIRE(op_name.count(pid));
      CHECK(op_name[pid] == w["producer"]);
    }
    for (const auto& c : w["consumers"]) CHECK(op_names.count(c.get<std::string>()));
    const std::string text = w["text"];
    CHECK(text.find("L0.") == std::string::npos);  // stage 0's layers
    CHECK(text.find("L1.") == std::string::npos);
    in_layers += text.find("L2.") != std::string::npos || text.find("L3.") != std::string::npos;
  }
  CHECK(collectives > 0);
  CHECK(in_layers > 0);
}

TEST_CASE("explain: graph_json(stage) lists an interleaved stage's chunks") {
  // 8 layers over pp 2 x v 2 virtual stages of 2 layers: stage 0 runs virtual
  // stages 0 and 2 (layers 0-1, 4-5), stage 1 virtual stages 1 and 3.
  Job job = gpt_job(8, 256, 4, 1, 1, false, 1, 64, 4);
  job.parallel.pp = 2;
  job.parallel.virtual_stages = 2;
  job.training.schedule = Schedule::kInterleaved;
  auto g = make(job);
  const auto s0 = graph_of(g, 0), s1 = graph_of(g, 1);
  CHECK(s0["virtual_stages"] == 2);
  CHECK(s0["layers"].get<std::vector<int64_t>>() == std::vector<int64_t>{0, 1, 4, 5});
  CHECK(s1["layers"].get<std::vector<int64_t>>() == std::vector<int64_t>{2, 3, 6, 7});
  // summary.json counts the layers a stage holds (4), not the span from its
  // first to its last (6 and 6).
  const auto sum = nlohmann::json::parse(g.summary_json());
  CHECK(sum["stages"][0]["layers"] == 4);
  CHECK(sum["stages"][1]["layers"] == 4);
  CHECK(sum["stages"][1]["first_layer"] == 2);
  CHECK(layers_of_ops(s1) == std::set<int64_t>{2, 3, 6, 7});
  REQUIRE(s1["chunks"].size() == 2);
  CHECK(s1["chunks"][0]["virtual_stage"] == 1);
  CHECK(s1["chunks"][0]["first_layer"] == 2);
  CHECK(s1["chunks"][0]["last_layer"] == 3);
  CHECK(s1["chunks"][0]["has_loss"] == false);
  CHECK(s1["chunks"][1]["virtual_stage"] == 3);
  CHECK(s1["chunks"][1]["first_layer"] == 6);
  CHECK(s1["chunks"][1]["last_layer"] == 7);
  CHECK(s1["chunks"][1]["has_loss"] == true);
  CHECK(s0["chunks"][0]["has_embedding"] == true);
  CHECK(s0["chunks"][1]["has_embedding"] == false);
  CHECK(s0["has_loss"] == false);
  CHECK(s1["has_loss"] == true);
}

TEST_CASE("explain: graph_json of a stage outside [0, pp) is an error naming the stage") {
  Job job = gpt_job(4, 256, 4, 1, 1, false, 1, 64, 4);
  job.parallel.pp = 2;
  auto g = make(job);
  for (int64_t bad : {int64_t{2}, int64_t{-1}, int64_t{1} << 40}) {
    CAPTURE(bad);
    auto r = g.graph_json(bad);
    REQUIRE(!r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK(r.error().path == "stage");
    CHECK(r.error().message.find("[0, 2)") != std::string::npos);
  }
  // Without pipeline parallelism only stage 0 exists.
  auto flat = make(gpt_job(1, 256, 4, 1, 1, false, 1, 64));
  CHECK(flat.graph_json(0).ok());
  CHECK(graph_of(flat)["num_stages"] == 1);
  CHECK(flat.graph_json(1).error().path == "stage");
}

TEST_CASE("explain: DeepSeek-V3's MoE layer on stage 1 is in stage 1's graph, not stage 0's") {
  // 4 layers, the first 3 dense (the preset's first_dense_layers), pp 2:
  // stage 0 holds dense layers 0-1, stage 1 dense layer 2 and MoE layer 3.
  auto job = parse_job(R"({"model": {"preset": "deepseek-v3", "num_layers": 4},
    "parallel": {"dp": 4, "pp": 2, "ep": 4, "expert_tp": 1},
    "training": {"seq_len": 64, "global_batch_size": 8}})");
  REQUIRE_MESSAGE(job.ok(), job.error().to_string());
  auto g = make(job.value());
  const auto s0 = graph_of(g, 0), s1 = graph_of(g, 1);
  CHECK(!has_op_kind(s0, "remesh"));
  CHECK(has_op_kind(s1, "remesh"));
  int dispatch0 = 0, dispatch1 = 0;
  for (const auto& op : s0["ops"])
    dispatch0 += op["kind"] == "collective" && op["collective"] == "all_to_all";
  for (const auto& op : s1["ops"]) {
    if (op["kind"] != "collective" || op["collective"] != "all_to_all") continue;
    ++dispatch1;
    CHECK(op["layer"] == 3);
    CHECK(op["axis"] == "ep");
  }
  CHECK(dispatch0 == 0);
  CHECK(dispatch1 == 4);  // dispatch and combine, forward and backward
  CHECK(s1["has_loss"] == true);
  CHECK(s0["moe_layers"].empty());
  CHECK(s1["moe_layers"].get<std::vector<int64_t>>() == std::vector<int64_t>{3});
  CHECK(s0["stages"][1]["moe_layers"] == s1["moe_layers"]);
}
