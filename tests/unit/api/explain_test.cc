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
