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

std::vector<int> RankLayout::axis_set(const std::string& axes) const {
  std::vector<int> out;
  size_t start = 0;
  while (start <= axes.size()) {
    size_t plus = axes.find('+', start);
    if (plus == std::string::npos) plus = axes.size();
    out.push_back(axis_index(axes.substr(start, plus - start)));
    start = plus + 1;
  }
  return out;
}

void RankLayout::enable_combined(const std::string& axes) {
  for (int i : axis_set(axes))
    if (i < 0 || axes_[i].degree <= 1) return;  // only when every axis is real
  combined_.push_back(axes);
}

int64_t RankLayout::groups_before_combined() const {
  int64_t n = 0;
  for (const auto& a : axes_)
    if (a.degree > 1) n += world_ / a.degree;
  if (embd_) n += world_ / degree("pp");
  return n;
}

int64_t RankLayout::group_id(int64_t rank, const std::string& axis) const {
  if (axis == "embd") {
    assert(embd_);
    int64_t base = 1;
    for (const auto& a : axes_)
      if (a.degree > 1) base += world_ / a.degree;
    return base + group_id(rank, "pp") - group_id(0, "pp");
  }
  if (axis.find('+') != std::string::npos) {
    int64_t base = 1 + groups_before_combined();
    for (const auto& c : combined_) {
      std::vector<int> set = axis_set(c);
      int64_t span = 1;
      for (int i : set) span *= axes_[i].degree;
      if (c != axis) {
        base += world_ / span;
        continue;
      }
      int64_t index = 0, radix = 1;
      for (size_t j = 0; j < axes_.size(); ++j) {
        if (std::find(set.begin(), set.end(), static_cast<int>(j)) != set.end()) continue;
        index += ((rank / stride_[j]) % axes_[j].degree) * radix;
        radix *= axes_[j].degree;
      }
      return base + index;
    }
    assert(false && "combined group not enabled");
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
  if (axis.find('+') != std::string::npos) {
    std::vector<int64_t> m{rank};
    for (int i : axis_set(axis)) {
      std::vector<int64_t> next;
      for (int64_t r : m)
        for (int64_t c = 0; c < axes_[i].degree; ++c) next.push_back(with_coord(r, axes_[i].name, c));
      m = std::move(next);
    }
    std::sort(m.begin(), m.end());
    return m;
  }
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
  for (const auto& c : combined_)
    for (int64_t r = 0; r < world_; ++r) {
      bool first = true;
      for (int i : axis_set(c)) first &= (r / stride_[i]) % axes_[i].degree == 0;
      if (first) t[group_id(r, c)] = group_members(r, c);
    }
  return t;
}

}  // namespace sc
