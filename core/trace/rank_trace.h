// One rank's lowered execution trace: the contract between lowering
// (trace/lower.h) and the Chakra writer (emit/). Plain data in Chakra's
// vocabulary: node kinds, collective types (Chakra enum values), bytes,
// FLOPs and microseconds. Node ids are the issue order (ascending), and
// every scheduling edge is a dependency (written as data_deps).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "graph/collective.h"  // CollectiveType
#include "parallel/groups.h"   // GroupTable

namespace sc {

enum class TraceNodeKind : int { kCompute = 4, kSend = 5, kRecv = 6, kCollective = 7 };  // Chakra NodeType

// A node's dependency ids, with up to two ids held inline, more on the
// heap: 24 bytes (a std::vector's size on 64-bit hosts) with 64-bit ids
// (DepList, a rank trace's), 16 with 32-bit ones (ProgramDeps, a lowered
// program's: trace/lower.h). Most lowered nodes have one or two
// dependencies, and programs hold millions of nodes: a heap block per node
// would cost an allocation, its first-touch page faults and its free.
// The subset of std::vector's interface the code uses; iterators are
// pointers.
template <class Id>
class BasicDepList {
 public:
  using value_type = Id;
  using size_type = size_t;
  using iterator = Id*;
  using const_iterator = const Id*;

  BasicDepList() noexcept : inline_{0, 0} {}
  BasicDepList(std::initializer_list<uint64_t> v) : BasicDepList() { assign(v.begin(), v.end()); }
  BasicDepList(const std::vector<uint64_t>& v) : BasicDepList() { assign(v.begin(), v.end()); }  // NOLINT: implicit, as a vector
  BasicDepList(const BasicDepList& o) : BasicDepList() { assign(o.begin(), o.end()); }
  BasicDepList(BasicDepList&& o) noexcept : size_(o.size_), cap_(o.cap_) {
    if (o.cap_ > kInline) {
      heap_ = o.heap_;
      o.cap_ = kInline;
      o.inline_[0] = o.inline_[1] = 0;
    } else {
      inline_[0] = o.inline_[0], inline_[1] = o.inline_[1];
    }
    o.size_ = 0;
  }
  BasicDepList& operator=(const BasicDepList& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  BasicDepList& operator=(BasicDepList&& o) noexcept {
    if (this != &o) {
      this->~BasicDepList();
      new (this) BasicDepList(std::move(o));
    }
    return *this;
  }
  BasicDepList& operator=(std::initializer_list<uint64_t> v) {
    assign(v.begin(), v.end());
    return *this;
  }
  BasicDepList& operator=(const std::vector<uint64_t>& v) {
    assign(v.begin(), v.end());
    return *this;
  }
  ~BasicDepList() {
    if (cap_ > kInline) delete[] heap_;
  }

  template <class It>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    Id* d = data();
    for (; first != last; ++first) *d++ = static_cast<Id>(*first);
    size_ = static_cast<uint32_t>(n);
  }
  void push_back(uint64_t v) {
    if (size_ == cap_) reserve(size_t{cap_} * 2);
    data()[size_++] = static_cast<Id>(v);
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    Id* p = new Id[n];
    std::copy(begin(), end(), p);
    if (cap_ > kInline) delete[] heap_;
    heap_ = p;
    cap_ = static_cast<uint32_t>(n);
  }
  void clear() noexcept { size_ = 0; }

  Id* data() noexcept { return cap_ > kInline ? heap_ : inline_; }
  const Id* data() const noexcept { return cap_ > kInline ? heap_ : inline_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  Id& operator[](size_t i) { return data()[i]; }
  Id operator[](size_t i) const { return data()[i]; }

  friend bool operator==(const BasicDepList& a, const BasicDepList& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const BasicDepList& a, const std::vector<uint64_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr uint32_t kInline = 2;
  union {
    Id inline_[kInline];
    Id* heap_;
  };
  uint32_t size_ = 0, cap_ = kInline;
};

using DepList = BasicDepList<uint64_t>;

struct TraceNode {
  uint64_t id = 0;
  std::string name;
  TraceNodeKind kind = TraceNodeKind::kCompute;
  // kCollective (next to kind: no padding; programs hold millions of nodes)
  CollectiveType coll = CollectiveType::kAllReduce;
  DepList deps;  // ids of nodes that must finish first

  // kCompute
  int64_t num_ops = 0;           // FLOPs
  uint64_t tensor_size = 0;      // bytes read + written (>= 1)
  uint64_t duration_micros = 0;  // roofline time under the hardware profile

  // kCollective / kSend / kRecv
  int64_t comm_size = 0;   // bytes, Chakra semantics (see docs/trace-format.md)
  int64_t group = 0;       // group-file key (kCollective), >= 1
  int32_t peer = -1;       // kSend: comm_dst, kRecv: comm_src (global rank)
  int32_t tag = 0;         // kSend/kRecv, >= 0

  // Bytes this node writes (its output tensor; 0 for a send): the
  // `outputs` attribute ASTRA-sim's local-memory tracking reads, and the
  // `inputs` of the nodes that depend on it (docs/trace-format.md).
  uint64_t output_bytes = 0;
};

struct RankTrace {
  int64_t rank = 0;
  std::vector<TraceNode> nodes;
};

// Provenance written into each file's GlobalMetadata.
struct TraceMetadata {
  std::string generator = "stagecraft";
  std::string generator_version;
  std::string config_hash;  // hex digest of the canonical job JSON
  int64_t world_size = 0;
};

}  // namespace sc
