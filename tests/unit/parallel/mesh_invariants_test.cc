// RankLayout's preconditions hold in every build: an unknown axis or a rank
// outside the world used to index axes_[-1] / stride_[-1] once NDEBUG
// removed the asserts (undefined behaviour in Release); now SC_CHECK stops
// with a message, and has_groups lets callers check an axis first.
#include <doctest/doctest.h>

#include "../base/death.h"
#include "parallel/mesh.h"

using sc::testing::run_in_child;

TEST_CASE("mesh: has_groups names exactly the axes group_id accepts") {
  sc::RankLayout l({{"tp", 2}, {"cp", 1}, {"dp", 2}, {"pp", 2}});
  CHECK(l.has_groups("tp"));
  CHECK(l.has_groups("dp"));
  CHECK(l.has_groups("pp"));
  CHECK_FALSE(l.has_groups("cp"));  // degree 1: no groups
  CHECK_FALSE(l.has_groups("ep"));
  CHECK_FALSE(l.has_groups(""));
  CHECK_FALSE(l.has_groups("embd"));
  l.enable_embedding_groups();
  CHECK(l.has_groups("embd"));
  CHECK_FALSE(l.has_groups("dp+tp"));
  l.enable_combined("tp+dp");
  CHECK(l.has_groups("tp+dp"));
  l.add_derived({"tp", "dp"}, {{"etp", 1}, {"ep", 4}});
  CHECK(l.has_groups("ep"));
  CHECK_FALSE(l.has_groups("etp"));
}

TEST_CASE("mesh: an unknown axis stops with a message instead of reading axes_[-1]") {
  sc::RankLayout l({{"tp", 4}, {"dp", 2}});
  auto id = run_in_child([&] { (void)l.group_id(3, "ep"); });
  CHECK(id.aborted);
  CHECK(id.err.find("no groups over axis 'ep'") != std::string::npos);
  auto members = run_in_child([&] { (void)l.group_members(3, "cp"); });
  CHECK(members.aborted);
  CHECK(members.err.find("no axis 'cp' in the layout") != std::string::npos);
  auto combined = run_in_child([&] { (void)l.group_id(0, "tp+dp"); });  // not enabled
  CHECK(combined.aborted);
  CHECK(combined.err.find("combined group tp+dp is not enabled") != std::string::npos);
  auto embd = run_in_child([&] { (void)l.group_id(0, "embd"); });
  CHECK(embd.aborted);
}

TEST_CASE("mesh: a rank outside the world stops with the range") {
  sc::RankLayout l({{"tp", 4}, {"dp", 2}});
  for (int64_t bad : {int64_t{-1}, int64_t{8}}) {
    auto end = run_in_child([&] { (void)l.group_id(bad, "tp"); });
    CHECK(end.aborted);
    CHECK(end.err.find("rank " + std::to_string(bad) + " outside [0, 8)") != std::string::npos);
  }
  auto ok = run_in_child([&] { (void)l.group_id(7, "dp"); });
  CHECK_FALSE(ok.aborted);
}

TEST_CASE("mesh: a degree below 1 stops at construction instead of dividing by zero later") {
  auto end = run_in_child([] { sc::RankLayout l({{"tp", 0}}); });
  CHECK(end.aborted);
  CHECK(end.err.find("axis tp has degree 0") != std::string::npos);
  auto derived = run_in_child([] {
    sc::RankLayout l({{"dp", 4}});
    l.add_derived({"dp"}, {{"dp_shard", 0}});
  });
  CHECK(derived.aborted);
}
