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

// A node's dependency ids: 24 bytes (a std::vector's size on 64-bit
// hosts), with up to two ids held inline, more on the heap. Most lowered
// nodes have one or two dependencies, and programs hold millions of nodes:
// a heap block per node would cost an allocation, its first-touch page
// faults and its free.
// The subset of std::vector's interface the code uses; iterators are
// pointers.
class DepList {
 public:
  using value_type = uint64_t;
  using size_type = size_t;
  using iterator = uint64_t*;
  using const_iterator = const uint64_t*;

  DepList() noexcept : inline_{0, 0} {}
  DepList(std::initializer_list<uint64_t> v) : DepList() { assign(v.begin(), v.end()); }
  DepList(const std::vector<uint64_t>& v) : DepList() { assign(v.begin(), v.end()); }  // NOLINT: implicit, as a vector
  DepList(const DepList& o) : DepList() { assign(o.begin(), o.end()); }
  DepList(DepList&& o) noexcept : size_(o.size_), cap_(o.cap_) {
    if (o.cap_ > kInline) {
      heap_ = o.heap_;
      o.cap_ = kInline;
      o.inline_[0] = o.inline_[1] = 0;
    } else {
      inline_[0] = o.inline_[0], inline_[1] = o.inline_[1];
    }
    o.size_ = 0;
  }
  DepList& operator=(const DepList& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  DepList& operator=(DepList&& o) noexcept {
    if (this != &o) {
      this->~DepList();
      new (this) DepList(std::move(o));
    }
    return *this;
  }
  DepList& operator=(std::initializer_list<uint64_t> v) {
    assign(v.begin(), v.end());
    return *this;
  }
  DepList& operator=(const std::vector<uint64_t>& v) {
    assign(v.begin(), v.end());
    return *this;
  }
  ~DepList() {
    if (cap_ > kInline) delete[] heap_;
  }

  template <class It>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    uint64_t* d = data();
    for (; first != last; ++first) *d++ = static_cast<uint64_t>(*first);
    size_ = static_cast<uint32_t>(n);
  }
  void push_back(uint64_t v) {
    if (size_ == cap_) reserve(size_t{cap_} * 2);
    data()[size_++] = v;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    uint64_t* p = new uint64_t[n];
    std::copy(begin(), end(), p);
    if (cap_ > kInline) delete[] heap_;
    heap_ = p;
    cap_ = static_cast<uint32_t>(n);
  }
  void clear() noexcept { size_ = 0; }

  uint64_t* data() noexcept { return cap_ > kInline ? heap_ : inline_; }
  const uint64_t* data() const noexcept { return cap_ > kInline ? heap_ : inline_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  uint64_t& operator[](size_t i) { return data()[i]; }
  uint64_t operator[](size_t i) const { return data()[i]; }

  friend bool operator==(const DepList& a, const DepList& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const DepList& a, const std::vector<uint64_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr uint32_t kInline = 2;
  union {
    uint64_t inline_[kInline];
    uint64_t* heap_;
  };
  uint32_t size_ = 0, cap_ = kInline;
};

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
