#include <doctest/doctest.h>

#include "parallel/mesh.h"

TEST_CASE("mesh: Megatron order tp innermost, then dp") {
  sc::RankLayout l({{"tp", 4}, {"dp", 2}});
  CHECK(l.world_size() == 8);
  CHECK(l.coord(6, "tp") == 2);
  CHECK(l.coord(6, "dp") == 1);
  CHECK(l.group_members(6, "tp") == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(l.group_members(6, "dp") == std::vector<int64_t>{2, 6});
  // tp groups are keys 1..2, dp groups 3..6, each ordered by lowest rank.
  CHECK(l.group_id(0, "tp") == 1);
  CHECK(l.group_id(7, "tp") == 2);
  CHECK(l.group_id(0, "dp") == 3);
  CHECK(l.group_id(5, "dp") == 4);
  CHECK(l.group_id(3, "dp") == 6);
  auto all = l.all_groups();
  CHECK(all.size() == 6);
  CHECK(all.at(4) == std::vector<int64_t>{1, 5});
}

TEST_CASE("mesh: every rank is in exactly one group per axis and group ids agree") {
  sc::RankLayout l({{"tp", 2}, {"dp", 3}});
  auto all = l.all_groups();
  for (int64_t r = 0; r < l.world_size(); ++r)
    for (const char* axis : {"tp", "dp"}) {
      const auto& members = all.at(l.group_id(r, axis));
      int hits = 0;
      for (int64_t m : members) {
        hits += m == r;
        CHECK(l.group_id(m, axis) == l.group_id(r, axis));
      }
      CHECK(hits == 1);
    }
}

TEST_CASE("mesh: axes of degree 1 get no groups") {
  sc::RankLayout l({{"tp", 1}, {"dp", 4}});
  auto all = l.all_groups();
  CHECK(all.size() == 1);
  CHECK(all.begin()->first == 1);
  CHECK(all.begin()->second == std::vector<int64_t>{0, 1, 2, 3});
}

TEST_CASE("mesh: Llama 3's order [tp, pp, dp] (their [tp, cp, pp, dp] without cp)") {
  sc::RankLayout l({{"tp", 2}, {"pp", 2}, {"dp", 2}});
  CHECK(l.group_members(0, "tp") == std::vector<int64_t>{0, 1});
  CHECK(l.group_members(0, "pp") == std::vector<int64_t>{0, 2});
  CHECK(l.group_members(0, "dp") == std::vector<int64_t>{0, 4});
  CHECK(l.coord(6, "pp") == 1);
  CHECK(l.with_coord(6, "pp", 0) == 4);
}
