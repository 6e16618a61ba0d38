#include "parallel/mesh.h"

#include <algorithm>
#include <cassert>

namespace sc {

RankLayout::RankLayout(std::vector<MeshAxis> inner_first) : axes_(std::move(inner_first)) {
  for (const auto& a : axes_) {
    stride_.push_back(world_);
    world_ *= a.degree;
  }
}

int RankLayout::axis_index(const std::string& axis) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == axis) return static_cast<int>(i);
  return -1;
}

int64_t RankLayout::degree(const std::string& axis) const {
  int i = axis_index(axis);
  return i < 0 ? 1 : axes_[i].degree;
}

int64_t RankLayout::coord(int64_t rank, const std::string& axis) const {
  int i = axis_index(axis);
  return i < 0 ? 0 : (rank / stride_[i]) % axes_[i].degree;
}

int64_t RankLayout::with_coord(int64_t rank, const std::string& axis, int64_t c) const {
  int i = axis_index(axis);
  if (i < 0) return rank;
  return rank + (c - coord(rank, axis)) * stride_[i];
}

int64_t RankLayout::group_id(int64_t rank, const std::string& axis) const {
  if (axis == "embd") {
    assert(embd_);
    int64_t base = 1;
    for (const auto& a : axes_)
      if (a.degree > 1) base += world_ / a.degree;
    return base + group_id(rank, "pp") - group_id(0, "pp");
  }
  int k = axis_index(axis);
  assert(k >= 0 && axes_[k].degree > 1);
  int64_t base = 1;
  for (int j = 0; j < k; ++j)
    if (axes_[j].degree > 1) base += world_ / axes_[j].degree;
  // Index among the groups of this axis: the other coordinates as a
  // mixed-radix number, inner axes fastest, which orders groups by their
  // lowest rank.
  int64_t index = 0, radix = 1;
  for (size_t j = 0; j < axes_.size(); ++j) {
    if (static_cast<int>(j) == k) continue;
    index += ((rank / stride_[j]) % axes_[j].degree) * radix;
    radix *= axes_[j].degree;
  }
  return base + index;
}

std::vector<int64_t> RankLayout::group_members(int64_t rank, const std::string& axis) const {
  if (axis == "embd") {
    std::vector<int64_t> m{with_coord(rank, "pp", 0), with_coord(rank, "pp", degree("pp") - 1)};
    std::sort(m.begin(), m.end());
    return m;
  }
  int k = axis_index(axis);
  int64_t first = rank - coord(rank, axis) * stride_[k];
  std::vector<int64_t> out;
  for (int64_t c = 0; c < axes_[k].degree; ++c) out.push_back(first + c * stride_[k]);
  return out;
}

GroupTable RankLayout::all_groups() const {
  GroupTable t;
  for (const auto& a : axes_) {
    if (a.degree <= 1) continue;
    for (int64_t r = 0; r < world_; ++r) {
      if (coord(r, a.name) != 0) continue;
      t[group_id(r, a.name)] = group_members(r, a.name);
    }
  }
  if (embd_)
    for (int64_t r = 0; r < world_; ++r)
      if (coord(r, "pp") == 0) t[group_id(r, "embd")] = group_members(r, "embd");
  return t;
}

}  // namespace sc
