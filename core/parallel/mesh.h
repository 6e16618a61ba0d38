// Rank layout: the parallel dimensions as a mixed-radix number, innermost
// (fastest-varying) axis first. Megatron-LM's default order is
// [tp, cp, ep, dp, pp]; with only tp and dp that is rank = tp_i + tp * dp_i.
// Communicator groups and their ids come from arithmetic on this layout,
// never from searching: the group of `rank` over axis X is every rank that
// differs from it only in X's coordinate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/groups.h"

namespace sc {

struct MeshAxis {
  std::string name;
  int64_t degree = 1;
  // A derived part that only positions the others (its coordinate is not
  // a communicator): no groups, has_groups false (DeepEP's node split of
  // ep keeps etp and edp as their own derived axes).
  bool groups = true;
};

class RankLayout {
 public:
  explicit RankLayout(std::vector<MeshAxis> inner_first);

  int64_t world_size() const { return world_; }
  const std::vector<MeshAxis>& axes() const { return axes_; }
  int64_t degree(const std::string& axis) const;  // 1 if absent
  int64_t coord(int64_t rank, const std::string& axis) const;
  // The rank that differs from `rank` only in `axis`, whose coordinate is c.
  int64_t with_coord(int64_t rank, const std::string& axis, int64_t c) const;

  // Megatron's embedding group: the first and last pipeline stage of each
  // pipeline (tied input/output embeddings sum their gradients over it).
  // Pseudo-axis "embd"; its groups are numbered after all axis groups.
  void enable_embedding_groups() { embd_ = degree("pp") > 1; }

  // Groups over several axes at once ("dp+cp": every rank differing only in
  // its dp and cp coordinates), numbered after the embedding groups.
  void enable_combined(const std::string& axes);

  // Axes that re-divide the ranks of some base axes: each rank's base
  // coordinates, read as one mixed-radix index (layout order, inner first),
  // are split into `parts`, inner first. Expert parallelism splits
  // (tp, cp, dp) into (etp, ep, edp); HSDP splits the data-parallel axes
  // into (shard, replica). Their groups are numbered after all others, part
  // by part in the order added. A part's name must be new.
  void add_derived(const std::vector<std::string>& base, const std::vector<MeshAxis>& parts_inner_first);
  // Every derived part, in the order added (degree 1 included; placeholder
  // parts, groups false, left out).
  std::vector<MeshAxis> derived_axes() const;

  // True when `axis` (a layout axis, "embd", a combined "a+b" or a derived
  // part) has communicator groups: group_id and group_members accept it.
  // Callers holding an axis name from elsewhere check it here first.
  bool has_groups(const std::string& axis) const;

  // Group-file key (>= 1) of rank's group over `axis` (degree > 1). Keys are
  // numbered axis by axis in layout order, groups in order of their lowest
  // rank; a derived axis's groups by the other parts' coordinates, then the
  // coordinates outside its base (unique and dense, not by lowest rank).
  int64_t group_id(int64_t rank, const std::string& axis) const;
  // group_id and group_members need has_groups(axis) (group_members also
  // takes a layout axis of degree 1) and rank in [0, world_size()): anything
  // else is a bug, stopped by SC_CHECK in every build (base/check.h).
  std::vector<int64_t> group_members(int64_t rank, const std::string& axis) const;
  GroupTable all_groups() const;  // every axis of degree > 1

 private:
  struct Derived {
    std::vector<int> base;          // layout axis indices, layout order
    std::vector<MeshAxis> parts;    // inner first
    std::vector<int64_t> part_stride;
  };
  struct DerivedRef { int derived = -1, part = -1; };
  DerivedRef find_derived(const std::string& axis) const;
  int64_t base_index(const Derived& d, int64_t rank) const;
  int64_t with_base_index(const Derived& d, int64_t rank, int64_t index) const;
  int64_t groups_before_derived() const;
  std::vector<Derived> derived_;

  // Adds rank's coordinates on the layout axes not in `excluded` to the
  // mixed-radix number key/radix (inner axes fastest): a group's index
  // among the groups of the excluded axes.
  void add_outside(int64_t rank, const std::vector<int>& excluded, int64_t* key, int64_t* radix) const;
  int64_t combined_groups(const std::string& axes) const;  // groups of a combined axis ("dp+cp")
  int64_t axis_groups() const;  // groups of all layout axes of degree > 1
  int axis_index(const std::string& axis) const;
  std::vector<int> axis_set(const std::string& axes) const;  // "dp+cp" -> indices
  int64_t groups_before_combined() const;
  std::vector<std::string> combined_;
  bool embd_ = false;
  std::vector<MeshAxis> axes_;
  std::vector<int64_t> stride_;
  int64_t world_ = 1;
};

}  // namespace sc
