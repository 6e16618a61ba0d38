// RankLayout::add_derived: expert parallelism folded into (tp, cp, dp) as
// Megatron-LM's expert RankGenerator does (order "tp-ep-dp-pp": expert_tp
// innermost, then ep, then expert-dp, over a pipeline stage's ranks), and
// HSDP's (dp_shard, dp_replicate) split of the data-parallel ranks (PyTorch
// HSDP's device mesh: the shard dimension innermost). Expected groups are
// written out by hand or computed here by independent mixed-radix
// arithmetic, never by asking the layout.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "parallel/mesh.h"

using namespace sc;

namespace {

using Ranks = std::vector<int64_t>;

// The four base axes, with the layout order innermost first.
struct Dims {
  int64_t tp = 1, cp = 1, dp = 1, pp = 1;
  std::vector<std::string> order = {"tp", "cp", "dp", "pp"};

  int64_t degree(const std::string& a) const {
    return a == "tp" ? tp : a == "cp" ? cp : a == "dp" ? dp : pp;
  }
  int64_t world() const { return tp * cp * dp * pp; }
  std::vector<MeshAxis> axes() const {
    std::vector<MeshAxis> out;
    for (const auto& a : order) out.push_back({a, degree(a)});
    return out;
  }
  // Rank <-> coordinates, by the mixed-radix number of the layout order.
  std::map<std::string, int64_t> coords(int64_t rank) const {
    std::map<std::string, int64_t> c;
    for (const auto& a : order) {
      c[a] = rank % degree(a);
      rank /= degree(a);
    }
    return c;
  }
  int64_t rank(const std::map<std::string, int64_t>& c) const {
    int64_t r = 0, stride = 1;
    for (const auto& a : order) {
      r += c.at(a) * stride;
      stride *= degree(a);
    }
    return r;
  }
  // The index of `base` coordinates read in layout order (inner first), and back.
  int64_t local(const std::map<std::string, int64_t>& c, const std::vector<std::string>& base) const {
    int64_t l = 0, radix = 1;
    for (const auto& a : order)
      if (std::count(base.begin(), base.end(), a)) {
        l += c.at(a) * radix;
        radix *= degree(a);
      }
    return l;
  }
  void set_local(std::map<std::string, int64_t>& c, const std::vector<std::string>& base, int64_t l) const {
    for (const auto& a : order)
      if (std::count(base.begin(), base.end(), a)) {
        c[a] = l % degree(a);
        l /= degree(a);
      }
  }
};

// Expected group of `rank` over part `which` of a split of `base` into
// `parts` (inner first): every rank whose base index differs only in that
// part's digit; the other axes stay.
Ranks expected_group(const Dims& d, const std::vector<std::string>& base, const std::vector<int64_t>& parts,
                     size_t which, int64_t rank) {
  auto c = d.coords(rank);
  int64_t l = d.local(c, base);
  std::vector<int64_t> digit;
  for (int64_t p : parts) {
    digit.push_back(l % p);
    l /= p;
  }
  Ranks out;
  for (int64_t x = 0; x < parts[which]; ++x) {
    digit[which] = x;
    int64_t idx = 0, radix = 1;
    for (size_t i = 0; i < parts.size(); ++i) {
      idx += digit[i] * radix;
      radix *= parts[i];
    }
    auto c2 = c;
    d.set_local(c2, base, idx);
    out.push_back(d.rank(c2));
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kExpertBase = {"tp", "cp", "dp"};
const std::vector<std::string> kDataBase = {"cp", "dp"};

RankLayout expert_layout(const Dims& d, int64_t etp, int64_t ep) {
  RankLayout l(d.axes());
  const int64_t edp = d.tp * d.cp * d.dp / (etp * ep);
  l.add_derived(kExpertBase, {{"etp", etp}, {"ep", ep}, {"edp", edp}});
  return l;
}

// Every expert group of every rank against the independent arithmetic.
void check_expert_groups(const Dims& d, int64_t etp, int64_t ep) {
  const int64_t edp = d.tp * d.cp * d.dp / (etp * ep);
  RankLayout l = expert_layout(d, etp, ep);
  const char* names[] = {"etp", "ep", "edp"};
  for (int64_t r = 0; r < d.world(); ++r)
    for (size_t p = 0; p < 3; ++p) {
      CAPTURE(r);
      CAPTURE(names[p]);
      CHECK(l.group_members(r, names[p]) == expected_group(d, kExpertBase, {etp, ep, edp}, p, r));
    }
}

// Every axis whose groups the layout numbers (degree > 1).
struct NamedAxis {
  std::string name;
  int64_t degree;
};

// all_groups() against group_id / group_members / with_coord / coord:
// every member maps back to its group's key, the groups of an axis
// partition the ranks, coordinates round-trip, keys are unique and 1..N.
void check_consistent(const RankLayout& l, const std::vector<NamedAxis>& axes) {
  const GroupTable all = l.all_groups();
  const int64_t world = l.world_size();
  // Keys dense: exactly 1..N.
  int64_t want_key = 1;
  for (const auto& [key, members] : all) CHECK(key == want_key++);
  int64_t expected_groups = 0;
  std::set<int64_t> keys_seen;
  for (const auto& ax : axes) {
    CAPTURE(ax.name);
    // Combined groups ("dp+cp") have members and keys but no coordinate.
    const bool combined = ax.name.find('+') != std::string::npos;
    if (!combined) CHECK(l.degree(ax.name) == ax.degree);
    if (ax.degree <= 1) continue;
    expected_groups += world / ax.degree;
    std::set<int64_t> keys_of_axis;
    std::vector<int> covered(static_cast<size_t>(world), 0);
    for (int64_t r = 0; r < world; ++r) {
      CAPTURE(r);
      const int64_t key = l.group_id(r, ax.name);
      REQUIRE(all.count(key) == 1);
      const Ranks& members = all.at(key);
      CHECK(members == l.group_members(r, ax.name));
      CHECK(static_cast<int64_t>(members.size()) == ax.degree);
      CHECK(std::is_sorted(members.begin(), members.end()));
      CHECK(std::count(members.begin(), members.end(), r) == 1);
      for (int64_t m : members) CHECK(l.group_id(m, ax.name) == key);
      if (keys_of_axis.insert(key).second)
        for (int64_t m : members) covered[static_cast<size_t>(m)]++;
      if (combined) continue;
      // Coordinates round-trip, and the group is exactly the ranks reached
      // by setting this axis' coordinate.
      const int64_t own = l.coord(r, ax.name);
      CHECK(own >= 0);
      CHECK(own < ax.degree);
      CHECK(l.with_coord(r, ax.name, own) == r);
      Ranks reached;
      for (int64_t c = 0; c < ax.degree; ++c) {
        const int64_t r2 = l.with_coord(r, ax.name, c);
        CHECK(l.coord(r2, ax.name) == c);
        CHECK(l.with_coord(r2, ax.name, own) == r);
        reached.push_back(r2);
      }
      std::sort(reached.begin(), reached.end());
      CHECK(reached == members);
    }
    // The axis' groups partition the ranks.
    CHECK(static_cast<int64_t>(keys_of_axis.size()) == world / ax.degree);
    for (int64_t r = 0; r < world; ++r) CHECK(covered[static_cast<size_t>(r)] == 1);
    // No key shared with another axis.
    for (int64_t k : keys_of_axis) CHECK(keys_seen.insert(k).second);
  }
  CHECK(static_cast<int64_t>(all.size()) == expected_groups);
}

std::vector<NamedAxis> base_axes(const Dims& d) {
  return {{"tp", d.tp}, {"cp", d.cp}, {"dp", d.dp}, {"pp", d.pp}};
}

}  // namespace

TEST_CASE("derived mesh: etp=2 x ep=4 over tp=2 x dp=4 gives Megatron's expert groups") {
  // Megatron's expert RankGenerator (tp-ep-dp-pp) with etp 2, ep 4, edp 1
  // over 8 ranks: etp groups [0,1],[2,3],..., ep groups [0,2,4,6],[1,3,5,7].
  Dims d;
  d.tp = 2, d.dp = 4;
  RankLayout l = expert_layout(d, 2, 4);
  CHECK(l.group_members(0, "ep") == Ranks{0, 2, 4, 6});
  CHECK(l.group_members(7, "ep") == Ranks{1, 3, 5, 7});
  CHECK(l.group_members(0, "etp") == Ranks{0, 1});
  CHECK(l.group_members(5, "etp") == Ranks{4, 5});
  CHECK(l.degree("edp") == 1);
  CHECK(l.coord(6, "ep") == 3);
  CHECK(l.coord(3, "etp") == 1);
  check_expert_groups(d, 2, 4);
  check_consistent(l, {{"tp", 2}, {"dp", 4}, {"etp", 2}, {"ep", 4}, {"edp", 1}});
}

TEST_CASE("derived mesh: etp=1 x ep=2 x edp=4 over tp=2 x dp=4") {
  // Megatron: ep groups [0,1],[2,3],...; expert-dp groups [0,2,4,6],[1,3,5,7].
  Dims d;
  d.tp = 2, d.dp = 4;
  RankLayout l = expert_layout(d, 1, 2);
  CHECK(l.group_members(0, "ep") == Ranks{0, 1});
  CHECK(l.group_members(6, "ep") == Ranks{6, 7});
  CHECK(l.group_members(0, "edp") == Ranks{0, 2, 4, 6});
  CHECK(l.group_members(3, "edp") == Ranks{1, 3, 5, 7});
  CHECK(l.degree("etp") == 1);
  check_expert_groups(d, 1, 2);
  check_consistent(l, {{"tp", 2}, {"dp", 4}, {"etp", 1}, {"ep", 2}, {"edp", 4}});
}

TEST_CASE("derived mesh: ep spanning tp and dp, and expert tp narrower than tp") {
  Dims d;
  d.tp = 4, d.dp = 2;
  SUBCASE("etp 1, ep 8: one ep group of the whole stage") {
    RankLayout l = expert_layout(d, 1, 8);
    CHECK(l.group_members(5, "ep") == Ranks{0, 1, 2, 3, 4, 5, 6, 7});
    check_expert_groups(d, 1, 8);
    check_consistent(l, {{"tp", 4}, {"dp", 2}, {"etp", 1}, {"ep", 8}, {"edp", 1}});
  }
  SUBCASE("etp 2, ep 2, edp 2") {
    // Local index = rank: etp digit rank%2, ep digit (rank/2)%2, edp rank/4.
    RankLayout l = expert_layout(d, 2, 2);
    CHECK(l.group_members(0, "etp") == Ranks{0, 1});
    CHECK(l.group_members(0, "ep") == Ranks{0, 2});
    CHECK(l.group_members(0, "edp") == Ranks{0, 4});
    CHECK(l.group_members(7, "ep") == Ranks{5, 7});
    check_expert_groups(d, 2, 2);
    check_consistent(l, {{"tp", 4}, {"dp", 2}, {"etp", 2}, {"ep", 2}, {"edp", 2}});
  }
}

TEST_CASE("derived mesh: with cp the expert index runs over tp, cp, dp") {
  // tp 2, cp 2, dp 2: local index = tp + 2 cp + 4 dp = rank. Megatron with
  // etp 1, ep 4: ep groups [0..3],[4..7], expert-dp [0,4],[1,5],...
  Dims d;
  d.tp = 2, d.cp = 2, d.dp = 2;
  RankLayout l = expert_layout(d, 1, 4);
  CHECK(l.group_members(0, "ep") == Ranks{0, 1, 2, 3});
  CHECK(l.group_members(6, "ep") == Ranks{4, 5, 6, 7});
  CHECK(l.group_members(1, "edp") == Ranks{1, 5});
  check_expert_groups(d, 1, 4);
  check_consistent(l, {{"tp", 2}, {"cp", 2}, {"dp", 2}, {"etp", 1}, {"ep", 4}, {"edp", 2}});
}

TEST_CASE("derived mesh: pipeline stage 1's expert groups are stage 0's offset by the stage size") {
  // Megatron order tp, cp, dp, pp: stage 1 is ranks 8..15.
  Dims d;
  d.tp = 2, d.dp = 4, d.pp = 2;
  SUBCASE("etp 2, ep 4") {
    RankLayout l = expert_layout(d, 2, 4);
    CHECK(l.group_members(8, "ep") == Ranks{8, 10, 12, 14});
    CHECK(l.group_members(15, "ep") == Ranks{9, 11, 13, 15});
    CHECK(l.group_members(9, "etp") == Ranks{8, 9});
    for (int64_t r = 0; r < 8; ++r) {
      Ranks shifted;
      for (int64_t m : l.group_members(r, "ep")) shifted.push_back(m + 8);
      CHECK(l.group_members(r + 8, "ep") == shifted);
    }
    check_expert_groups(d, 2, 4);
    check_consistent(l, {{"tp", 2}, {"dp", 4}, {"pp", 2}, {"etp", 2}, {"ep", 4}, {"edp", 1}});
  }
  SUBCASE("etp 1, ep 2, edp 4") {
    RankLayout l = expert_layout(d, 1, 2);
    CHECK(l.group_members(8, "ep") == Ranks{8, 9});
    CHECK(l.group_members(8, "edp") == Ranks{8, 10, 12, 14});
    check_expert_groups(d, 1, 2);
    check_consistent(l, {{"tp", 2}, {"dp", 4}, {"pp", 2}, {"etp", 1}, {"ep", 2}, {"edp", 4}});
  }
}

TEST_CASE("derived mesh: Llama 3's order [tp, cp, pp, dp] keeps expert groups inside one stage") {
  // tp 2, pp 2, dp 2: rank = tp + 2 pp + 4 dp. Stage 0 = {0,1,4,5},
  // stage 1 = {2,3,6,7}; the stage-local index is tp + 2 dp.
  Dims d;
  d.tp = 2, d.pp = 2, d.dp = 2;
  d.order = {"tp", "cp", "pp", "dp"};
  SUBCASE("etp 1, ep 4: one ep group per stage") {
    RankLayout l = expert_layout(d, 1, 4);
    CHECK(l.group_members(0, "ep") == Ranks{0, 1, 4, 5});
    CHECK(l.group_members(2, "ep") == Ranks{2, 3, 6, 7});
    CHECK(l.group_members(7, "ep") == Ranks{2, 3, 6, 7});
    check_expert_groups(d, 1, 4);
    check_consistent(l, {{"tp", 2}, {"pp", 2}, {"dp", 2}, {"etp", 1}, {"ep", 4}, {"edp", 1}});
  }
  SUBCASE("etp 1, ep 2, edp 2") {
    RankLayout l = expert_layout(d, 1, 2);
    CHECK(l.group_members(0, "ep") == Ranks{0, 1});
    CHECK(l.group_members(0, "edp") == Ranks{0, 4});
    CHECK(l.group_members(3, "edp") == Ranks{3, 7});
    check_expert_groups(d, 1, 2);
    check_consistent(l, {{"tp", 2}, {"pp", 2}, {"dp", 2}, {"etp", 1}, {"ep", 2}, {"edp", 2}});
  }
  // Whatever the split, no derived group leaves its pipeline stage.
  for (auto [etp, ep] : std::vector<std::pair<int64_t, int64_t>>{{1, 4}, {2, 2}, {1, 2}, {2, 1}, {4, 1}, {1, 1}}) {
    if (4 % (etp * ep) != 0) continue;
    RankLayout l = expert_layout(d, etp, ep);
    for (int64_t r = 0; r < d.world(); ++r)
      for (const char* ax : {"etp", "ep", "edp"})
        for (int64_t m : l.group_members(r, ax)) CHECK(d.coords(m).at("pp") == d.coords(r).at("pp"));
  }
}

TEST_CASE("derived mesh: other layout orders against the arithmetic") {
  Dims d;
  d.tp = 2, d.cp = 2, d.dp = 3, d.pp = 2;
  for (auto order : std::vector<std::vector<std::string>>{
           {"tp", "cp", "dp", "pp"}, {"tp", "cp", "pp", "dp"}, {"pp", "tp", "dp", "cp"}, {"dp", "pp", "cp", "tp"}}) {
    d.order = order;
    CAPTURE(order[0] + order[1] + order[2] + order[3]);
    for (auto [etp, ep] : std::vector<std::pair<int64_t, int64_t>>{{1, 12}, {2, 3}, {1, 4}, {4, 3}, {2, 6}, {1, 1}}) {
      CAPTURE(etp);
      CAPTURE(ep);
      check_expert_groups(d, etp, ep);
      RankLayout l = expert_layout(d, etp, ep);
      auto axes = base_axes(d);
      axes.push_back({"etp", etp});
      axes.push_back({"ep", ep});
      axes.push_back({"edp", 12 / (etp * ep)});
      check_consistent(l, axes);
    }
  }
}

TEST_CASE("derived mesh: HSDP dp_shard (inner) x dp_replicate over the data-parallel ranks") {
  SUBCASE("tp 2, dp 4, shard 2") {
    // Data index = dp coordinate; shard groups {dp 0,1},{dp 2,3}; replicas {dp 0,2},{dp 1,3}.
    Dims d;
    d.tp = 2, d.dp = 4;
    RankLayout l(d.axes());
    l.add_derived(kDataBase, {{"dp_shard", 2}, {"dp_replicate", 2}});
    CHECK(l.group_members(0, "dp_shard") == Ranks{0, 2});
    CHECK(l.group_members(5, "dp_shard") == Ranks{5, 7});
    CHECK(l.group_members(0, "dp_replicate") == Ranks{0, 4});
    CHECK(l.group_members(3, "dp_replicate") == Ranks{3, 7});
    for (int64_t r = 0; r < d.world(); ++r) {
      CHECK(l.group_members(r, "dp_shard") == expected_group(d, kDataBase, {2, 2}, 0, r));
      CHECK(l.group_members(r, "dp_replicate") == expected_group(d, kDataBase, {2, 2}, 1, r));
    }
    check_consistent(l, {{"tp", 2}, {"dp", 4}, {"dp_shard", 2}, {"dp_replicate", 2}});
  }
  SUBCASE("cp 2, dp 4, shard 4: cp innermost in the data index") {
    // Data index = cp + 2 dp; rank = cp + 2 dp (tp 1). Shard groups of 4
    // consecutive indices, replicas 4 apart.
    Dims d;
    d.cp = 2, d.dp = 4;
    RankLayout l(d.axes());
    l.add_derived(kDataBase, {{"dp_shard", 4}, {"dp_replicate", 2}});
    CHECK(l.group_members(0, "dp_shard") == Ranks{0, 1, 2, 3});
    CHECK(l.group_members(6, "dp_shard") == Ranks{4, 5, 6, 7});
    CHECK(l.group_members(1, "dp_replicate") == Ranks{1, 5});
    for (int64_t r = 0; r < d.world(); ++r) {
      CHECK(l.group_members(r, "dp_shard") == expected_group(d, kDataBase, {4, 2}, 0, r));
      CHECK(l.group_members(r, "dp_replicate") == expected_group(d, kDataBase, {4, 2}, 1, r));
    }
    check_consistent(l, {{"cp", 2}, {"dp", 4}, {"dp_shard", 4}, {"dp_replicate", 2}});
  }
  SUBCASE("the generator's full layout: experts, dp+cp and HSDP together, pp 2, Llama 3 order") {
    // As core/api/api.cc builds it: expert parts first, then HSDP's; the
    // combined dp+cp groups are numbered before both.
    Dims d;
    d.tp = 2, d.cp = 2, d.dp = 4, d.pp = 2;
    d.order = {"tp", "cp", "pp", "dp"};
    RankLayout l(d.axes());
    l.enable_combined("dp+cp");
    l.add_derived(kExpertBase, {{"etp", 1}, {"ep", 4}, {"edp", 4}});
    l.add_derived(kDataBase, {{"dp_shard", 2}, {"dp_replicate", 4}});
    for (int64_t r = 0; r < d.world(); ++r) {
      CHECK(l.group_members(r, "ep") == expected_group(d, kExpertBase, {1, 4, 4}, 1, r));
      CHECK(l.group_members(r, "edp") == expected_group(d, kExpertBase, {1, 4, 4}, 2, r));
      CHECK(l.group_members(r, "dp_shard") == expected_group(d, kDataBase, {2, 4}, 0, r));
      CHECK(l.group_members(r, "dp_replicate") == expected_group(d, kDataBase, {2, 4}, 1, r));
    }
    // rank = tp + 2 cp + 4 pp + 8 dp: rank 0's shard group is (cp, dp) in
    // {(0,0),(1,0)} = {0, 2}; its replicas are cp 0, dp 0..3 stepping the
    // data index by 2: indices 0, 2, 4, 6 = (cp 0, dp 0..3) = {0, 8, 16, 24}.
    CHECK(l.group_members(0, "dp_shard") == Ranks{0, 2});
    CHECK(l.group_members(0, "dp_replicate") == Ranks{0, 8, 16, 24});
    auto axes = base_axes(d);
    for (NamedAxis a : {NamedAxis{"dp+cp", 8}, NamedAxis{"etp", 1}, NamedAxis{"ep", 4}, NamedAxis{"edp", 4},
                        NamedAxis{"dp_shard", 2}, NamedAxis{"dp_replicate", 4}})
      axes.push_back(a);
    check_consistent(l, axes);
  }
}
