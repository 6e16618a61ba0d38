#include "parallel/mesh.h"

#include <algorithm>

#include "base/check.h"

namespace sc {

RankLayout::RankLayout(std::vector<MeshAxis> inner_first) : axes_(std::move(inner_first)) {
  for (const auto& a : axes_) {
    SC_CHECK(a.degree >= 1, "axis " + a.name + " has degree " + std::to_string(a.degree));
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
  if (i < 0) {
    DerivedRef d = find_derived(axis);
    return d.derived < 0 ? 1 : derived_[d.derived].parts[d.part].degree;
  }
  return axes_[i].degree;
}

int64_t RankLayout::coord(int64_t rank, const std::string& axis) const {
  int i = axis_index(axis);
  if (i < 0) {
    DerivedRef r = find_derived(axis);
    if (r.derived < 0) return 0;
    const Derived& d = derived_[r.derived];
    return (base_index(d, rank) / d.part_stride[r.part]) % d.parts[r.part].degree;
  }
  return (rank / stride_[i]) % axes_[i].degree;
}

int64_t RankLayout::with_coord(int64_t rank, const std::string& axis, int64_t c) const {
  int i = axis_index(axis);
  if (i < 0) {
    DerivedRef r = find_derived(axis);
    if (r.derived < 0) return rank;
    const Derived& d = derived_[r.derived];
    int64_t index = base_index(d, rank);
    int64_t old = (index / d.part_stride[r.part]) % d.parts[r.part].degree;
    return with_base_index(d, rank, index + (c - old) * d.part_stride[r.part]);
  }
  return rank + (c - coord(rank, axis)) * stride_[i];
}

void RankLayout::add_derived(const std::vector<std::string>& base, const std::vector<MeshAxis>& parts) {
  Derived d;
  for (size_t j = 0; j < axes_.size(); ++j)
    if (std::find(base.begin(), base.end(), axes_[j].name) != base.end()) d.base.push_back(static_cast<int>(j));
  int64_t stride = 1;
  for (const auto& p : parts) {
    SC_CHECK(p.degree >= 1, "derived axis " + p.name + " has degree " + std::to_string(p.degree));
    d.parts.push_back(p);
    d.part_stride.push_back(stride);
    stride *= p.degree;
  }
  derived_.push_back(std::move(d));
}

std::vector<MeshAxis> RankLayout::derived_axes() const {
  std::vector<MeshAxis> out;
  for (const auto& d : derived_)
    for (const auto& p : d.parts)
      if (p.groups) out.push_back(p);  // a placeholder part is no axis of its own
  return out;
}

RankLayout::DerivedRef RankLayout::find_derived(const std::string& axis) const {
  for (size_t i = 0; i < derived_.size(); ++i)
    for (size_t p = 0; p < derived_[i].parts.size(); ++p)
      if (derived_[i].parts[p].name == axis) return {static_cast<int>(i), static_cast<int>(p)};
  return {};
}

int64_t RankLayout::base_index(const Derived& d, int64_t rank) const {
  int64_t index = 0, radix = 1;
  for (int j : d.base) {
    index += ((rank / stride_[j]) % axes_[j].degree) * radix;
    radix *= axes_[j].degree;
  }
  return index;
}

int64_t RankLayout::with_base_index(const Derived& d, int64_t rank, int64_t index) const {
  for (int j : d.base) {
    const int64_t want = index % axes_[j].degree;
    index /= axes_[j].degree;
    rank += (want - (rank / stride_[j]) % axes_[j].degree) * stride_[j];
  }
  return rank;
}

int64_t RankLayout::groups_before_derived() const {
  int64_t n = groups_before_combined();
  for (const auto& c : combined_) n += combined_groups(c);
  return n;
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

void RankLayout::add_outside(int64_t rank, const std::vector<int>& excluded, int64_t* key, int64_t* radix) const {
  for (size_t j = 0; j < axes_.size(); ++j) {
    if (std::find(excluded.begin(), excluded.end(), static_cast<int>(j)) != excluded.end()) continue;
    *key += ((rank / stride_[j]) % axes_[j].degree) * *radix;
    *radix *= axes_[j].degree;
  }
}

int64_t RankLayout::combined_groups(const std::string& axes) const {
  int64_t span = 1;
  for (int i : axis_set(axes)) span *= axes_[i].degree;
  return world_ / span;
}

void RankLayout::enable_combined(const std::string& axes) {
  for (int i : axis_set(axes))
    if (i < 0 || axes_[i].degree <= 1) return;  // only when every axis is real
  combined_.push_back(axes);
}

int64_t RankLayout::axis_groups() const {
  int64_t n = 0;
  for (const auto& a : axes_)
    if (a.degree > 1) n += world_ / a.degree;
  return n;
}

int64_t RankLayout::groups_before_combined() const { return axis_groups() + (embd_ ? world_ / degree("pp") : 0); }

bool RankLayout::has_groups(const std::string& axis) const {
  if (DerivedRef r = find_derived(axis); r.derived >= 0) {
    const MeshAxis& part = derived_[r.derived].parts[r.part];
    return part.degree > 1 && part.groups;
  }
  if (axis == "embd") return embd_;
  if (axis.find('+') != std::string::npos)
    return std::find(combined_.begin(), combined_.end(), axis) != combined_.end();
  const int k = axis_index(axis);
  return k >= 0 && axes_[k].degree > 1;
}

int64_t RankLayout::group_id(int64_t rank, const std::string& axis) const {
  SC_CHECK(rank >= 0 && rank < world_, "rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_) + ")");
  if (DerivedRef r = find_derived(axis); r.derived >= 0) {
    int64_t base = 1 + groups_before_derived();
    for (int i = 0; i <= r.derived; ++i) {
      const Derived& d = derived_[i];
      for (size_t p = 0; p < d.parts.size(); ++p) {
        if (d.parts[p].degree <= 1 || !d.parts[p].groups) continue;
        if (i == r.derived && static_cast<int>(p) == r.part) {
          // Index among this part's groups: the other parts' coordinates,
          // then the layout axes outside the base, as one mixed-radix number.
          const int64_t index = base_index(d, rank);
          int64_t key = 0, radix = 1;
          for (size_t q = 0; q < d.parts.size(); ++q) {
            if (q == p) continue;
            key += ((index / d.part_stride[q]) % d.parts[q].degree) * radix;
            radix *= d.parts[q].degree;
          }
          add_outside(rank, d.base, &key, &radix);
          return base + key;
        }
        base += world_ / d.parts[p].degree;
      }
    }
  }
  if (axis == "embd") {
    SC_CHECK(embd_, "embedding groups are not enabled");
    const int64_t base = 1 + axis_groups();
    return base + group_id(rank, "pp") - group_id(0, "pp");
  }
  if (axis.find('+') != std::string::npos) {
    int64_t base = 1 + groups_before_combined();
    for (const auto& c : combined_) {
      if (c != axis) {
        base += combined_groups(c);
        continue;
      }
      int64_t index = 0, radix = 1;
      add_outside(rank, axis_set(c), &index, &radix);
      return base + index;
    }
    SC_CHECK(false, "combined group " + axis + " is not enabled");
  }
  int k = axis_index(axis);
  SC_CHECK(k >= 0 && axes_[k].degree > 1, "no groups over axis '" + axis + "'");
  int64_t base = 1;
  for (int j = 0; j < k; ++j)
    if (axes_[j].degree > 1) base += world_ / axes_[j].degree;
  // Index among the groups of this axis: the other coordinates as a
  // mixed-radix number, inner axes fastest, which orders groups by their
  // lowest rank.
  int64_t index = 0, radix = 1;
  add_outside(rank, {k}, &index, &radix);
  return base + index;
}

std::vector<int64_t> RankLayout::group_members(int64_t rank, const std::string& axis) const {
  SC_CHECK(rank >= 0 && rank < world_, "rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_) + ")");
  if (find_derived(axis).derived >= 0) {
    std::vector<int64_t> m;
    for (int64_t c = 0; c < degree(axis); ++c) m.push_back(with_coord(rank, axis, c));
    std::sort(m.begin(), m.end());
    return m;
  }
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
  SC_CHECK(k >= 0, "no axis '" + axis + "' in the layout");
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
  for (const auto& d : derived_)
    for (const auto& p : d.parts) {
      if (p.degree <= 1 || !p.groups) continue;
      for (int64_t r = 0; r < world_; ++r)
        if (coord(r, p.name) == 0) t[group_id(r, p.name)] = group_members(r, p.name);
    }
  return t;
}

}  // namespace sc
