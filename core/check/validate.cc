// The rules of check/validate.h, streamed: StreamingValidator::check runs
// the per-rank rules on one rank (ids, dependencies, cycles, node contents:
// R1-R5, R6 per collective, R8 per node, R7b) and keeps of it only a
// compact summary (a hash per group sequence for R7, counts per send/recv
// key for R8); take() folds that in (and R9's per-rank part); finish()
// runs the cross-rank rules on the summaries (archive R9, group file R6,
// sequences R7, pairing R8) and reads back the few ranks a kept R7 or R8
// finding must name a node of. Everything is iterative and linear in nodes
// + edges: archives have 100K+ nodes per rank. docs/validate.md.
#include "check/validate.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "emit/chakra_names.h"

namespace sc {
namespace {

namespace attr = chakra::attr;

// "COMP_NODE(4)", "UNKNOWN(12)": names from the schema (emit/chakra_names.h).
std::string node_type_str(int t) {
  const char* n = chakra::node_type_name(t);
  return std::string(n ? n : "UNKNOWN") + "(" + std::to_string(t) + ")";
}

std::string coll_str(int t) {
  const char* n = chakra::comm_type_name(t);
  return std::string(n ? n : "UNKNOWN") + "(" + std::to_string(t) + ")";
}

bool supported_kind(TraceNodeKind k) { return chakra::is_written_node_type(static_cast<int>(k)); }

bool supported_coll(CollectiveType c) { return chakra::is_supported_collective(static_cast<int64_t>(c)); }

// A node as the report names it, kept after the rank's nodes are gone.
struct NodeRef {
  uint64_t id = 0;
  std::string name;
  int coll = 0;
  int64_t size = 0;
};

NodeRef ref_of(const TraceNode& n) { return {n.id, n.name, static_cast<int>(n.coll), n.comm_size}; }

// "#3 ALL_REDUCE(0) of 4096 bytes (node 17 name)"
// label: false when the finding already names the node.
std::string coll_desc(size_t k, const NodeRef& n, bool label = true) {
  return "#" + std::to_string(k) + " " + coll_str(n.coll) + " of " + std::to_string(n.size) + " bytes" +
         (label ? " (node " + std::to_string(n.id) + " " + n.name + ")" : "");
}

std::string members_str(const std::vector<int64_t>& m) {
  std::string s = "[";
  for (size_t i = 0; i < m.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(m[i]);
  return s + (m.size() > 16 ? ", ...]" : "]");
}

// N: a TraceNode or a NodeRef (anything with an id and a name).
template <typename N>
Violation make_violation(int64_t rank, const N* n, const char* rule, std::string msg,
                         Severity sev = Severity::kError) {
  Violation v;
  v.rank = rank;
  if (n) { v.has_node = true; v.node_id = n->id; v.node_name = n->name; }
  v.rule = rule;
  v.severity = sev;
  v.message = std::move(msg);
  return v;
}

// A finding about no node (the archive, a group, a missing rank).
Violation make_violation(int64_t rank, std::nullptr_t, const char* rule, std::string msg,
                         Severity sev = Severity::kError) {
  return make_violation<NodeRef>(rank, nullptr, rule, std::move(msg), sev);
}

// R7's signature of a (type, size) sequence: the count plus a 64-bit hash
// chained through splitmix64's finalizer (a bijection), so it depends on
// every element and on their order. Equal sequences give equal signatures;
// two different sequences of the same length share one with probability
// about 2^-64 (docs/validate.md, "Streaming").
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
constexpr uint64_t kSeqSeed = 0x243f6a8885a308d3ULL;
uint64_t seq_step(uint64_t h, int coll, int64_t size) {
  const uint64_t e = mix64(static_cast<uint64_t>(size) + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(coll) + 1));
  return mix64(h ^ e);
}

// R8's key: a message from src to dst with a tag and a size.
struct MsgKey {
  int64_t src = 0, dst = 0;
  int32_t tag = 0;
  int64_t size = 0;
  bool operator==(const MsgKey& o) const { return src == o.src && dst == o.dst && tag == o.tag && size == o.size; }
  bool operator<(const MsgKey& o) const {
    return std::tie(src, dst, tag, size) < std::tie(o.src, o.dst, o.tag, o.size);
  }
};
struct MsgKeyHash {
  size_t operator()(const MsgKey& k) const {
    uint64_t h = mix64(static_cast<uint64_t>(k.src) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(k.dst));
    h = mix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(k.tag)) << 1));
    return static_cast<size_t>(mix64(h ^ static_cast<uint64_t>(k.size)));
  }
};

// The ranks fed so far: a bitmap for ranks below 2^26, a set beyond (only a
// corrupt world_size lets such ranks in).
class RankSet {
 public:
  bool insert(int64_t r) {
    if (r < kBits) {
      if (static_cast<size_t>(r) >= bits_.size()) bits_.resize(std::max<size_t>(static_cast<size_t>(r) + 1, bits_.size() * 2));
      if (bits_[static_cast<size_t>(r)]) return false;
      bits_[static_cast<size_t>(r)] = true;
      ++n_;
      return true;
    }
    const bool fresh = big_.insert(r).second;
    n_ += fresh;
    return fresh;
  }
  bool contains(int64_t r) const {
    if (r < 0) return false;
    if (r < kBits) return static_cast<size_t>(r) < bits_.size() && bits_[static_cast<size_t>(r)];
    return big_.count(r) != 0;
  }
  int64_t size() const { return n_; }
  void append_to(std::vector<int64_t>* out) const {
    for (size_t r = 0; r < bits_.size(); ++r) if (bits_[r]) out->push_back(static_cast<int64_t>(r));
    out->insert(out->end(), big_.begin(), big_.end());
  }

 private:
  static constexpr int64_t kBits = int64_t{1} << 26;
  std::vector<bool> bits_;
  std::set<int64_t> big_;
  int64_t n_ = 0;
};

// Indices of the collectives of t on group g, in ascending id (stable): the
// order R7 compares. The same selection as the per-rank pass makes for a
// rank that is a member of g.
std::vector<uint32_t> collectives_on(const DecodedTrace& t, int64_t g) {
  const auto& nodes = t.trace.nodes;
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == TraceNodeKind::kCollective && nodes[i].group == g) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return nodes[a].id < nodes[b].id; });
  return idx;
}

}  // namespace

// ------------------------------------------------------------------ state

struct StreamingValidator::State {
  State(const GroupTable& g, ValidateOptions o, RankLoader l) : groups(g), opt(std::move(o)), loader(std::move(l)) {
    if (opt.world_size > 0) { world = opt.world_size; world_fixed = true; }
    size_t total = 0;
    for (const auto& [key, m] : groups) {
      gindex.emplace(key, static_cast<uint32_t>(gkeys.size()));
      gkeys.push_back(key);
      std::vector<int64_t> sorted(m.begin(), m.end());
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      slot_off.push_back(total);
      total += sorted.size();
      members.push_back(std::move(sorted));
    }
    slots.assign(total, Slot{});
  }

  // Index of group g, or -1 when it is not a key of the group file.
  int64_t group_index(int64_t g) const {
    auto it = gindex.find(g);
    return it == gindex.end() ? -1 : static_cast<int64_t>(it->second);
  }
  // Position of rank r among the members of group gi, or -1.
  int64_t member_pos(size_t gi, int64_t r) const {
    const auto& m = members[gi];
    auto it = std::lower_bound(m.begin(), m.end(), r);
    return it != m.end() && *it == r ? it - m.begin() : -1;
  }

  // world_size as validate_traces takes it from the lowest rank.
  void fix_world(int64_t rank, int64_t meta_world) {
    if (world_fixed) return;
    world_fixed = true;
    if (meta_world > 0) { world = meta_world; return; }
    world = opt.assumed_world_size > 0 ? opt.assumed_world_size : rank + 1;
    archive.add(make_violation(-1, nullptr, "R9", std::string(attr::kWorldSize) + " unknown (not in the metadata); assuming " + std::to_string(world)));
  }

  const GroupTable& groups;
  const ValidateOptions opt;
  const RankLoader loader;
  int64_t world = 0;
  bool world_fixed = false;

  // Groups, ascending key (GroupTable order), members sorted and distinct.
  std::unordered_map<int64_t, uint32_t> gindex;
  std::vector<int64_t> gkeys;
  std::vector<std::vector<int64_t>> members;
  std::vector<size_t> slot_off;
  // R7: per (group, member) the signature of the member's sequence; a fed
  // member without collectives on the group keeps the empty one.
  struct Slot {
    uint64_t hash = kSeqSeed;
    uint64_t count = 0;
  };
  std::vector<Slot> slots;

  // R8: sends minus recvs per key; a key leaves when it balances, so this
  // holds the messages whose other end has not been fed yet.
  std::unordered_map<MsgKey, int64_t, MsgKeyHash> msgs;

  // R9
  RankSet fed;
  std::set<int64_t> undecodable;
  bool have_ref = false;
  int64_t ref_rank = -1;
  std::string ref_hash;

  ValidationReport archive;  // R9 and the group file, in validate_traces' order
  ValidationReport per_rank;  // R1-R6, R8 per node, R7b, in feed order
  bool finished = false;
};

// --------------------------------------------------------------- per rank

namespace {

// One rank's per-rank rules; fills a RankCheck.
class RankChecker {
 public:
  RankChecker(const StreamingValidator::State& s, int64_t world, const DecodedTrace& t, RankCheck* out)
      : s_(s), world_(world), t_(t), nodes_(t.trace.nodes), r_(t.rank), out_(out) {}

  void run() {
    out_->rank = t_.rank;
    out_->world_size = t_.meta.world_size;
    out_->config_hash = t_.meta.config_hash;
    out_->nodes = static_cast<int64_t>(nodes_.size());
    if (r_ < 0 || r_ >= world_) return;  // take() reports it; nothing else is checked
    check_rank();
    summarize();
    check_chaining();
  }

 private:
  void add(const TraceNode* n, const char* rule, std::string msg, Severity sev = Severity::kError) {
    out_->findings.add(make_violation(r_, n, rule, std::move(msg), sev));
  }

  // R1-R5 and the per-node parts of R6 and R8.
  void check_rank() {
    std::unordered_map<uint64_t, uint32_t> index;  // id -> last node with it (the simulator keeps the last)
    index.reserve(nodes_.size());
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
      auto [it, fresh] = index.emplace(nodes_[i].id, i);
      if (!fresh) {
        add(&nodes_[i], "R1", "duplicate id: node " + std::to_string(nodes_[it->second].id) + " (" +
            nodes_[it->second].name + ") has it too; the simulator silently keeps only the last");
        it->second = i;
      }
    }
    off_.assign(1, 0);
    for (const TraceNode& n : nodes_) {
      for (uint64_t d : n.deps) {
        auto it = index.find(d);
        if (it == index.end()) add(&n, "R2", "dependency on id " + std::to_string(d) + ", which is not in the file");
        else dep_.push_back(it->second);
      }
      off_.push_back(static_cast<uint32_t>(dep_.size()));
      check_node(n);
    }
    check_cycles();
    for (auto& [g, idx] : colls_) {
      std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return nodes_[a].id < nodes_[b].id; });
    }
  }

  void check_node(const TraceNode& n) {
    if (n.name.empty()) add(&n, "R5", "node has no name");
    if (!supported_kind(n.kind)) {
      add(&n, "R4", "node type " + node_type_str(static_cast<int>(n.kind)) +
          " is not run by the simulator (only COMP, SEND, RECV, COLL nodes are)");
      return;
    }
    if (n.kind == TraceNodeKind::kCompute) {
      if (n.tensor_size < 1) add(&n, "R5", std::string(attr::kTensorSize) + " is 0 (stalls the simulator's roofline model)");
      if (n.num_ops < 0) add(&n, "R5", std::string(attr::kNumOps) + " is " + std::to_string(n.num_ops) + " < 0");
      return;
    }
    if (n.comm_size < 0) add(&n, "R5", std::string(attr::kCommSize) + " is " + std::to_string(n.comm_size) + " < 0");
    if (n.kind == TraceNodeKind::kCollective) {
      if (!supported_coll(n.coll)) {
        add(&n, "R4", "collective type " + coll_str(static_cast<int>(n.coll)) +
            " is not run by the simulator (only ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL)");
      }
      const std::string pg = std::string(attr::kPgName) + " \"" + std::to_string(n.group) + "\"";
      if (!s_.opt.groups_unavailable) {
        const int64_t gi = s_.group_index(n.group);
        if (gi < 0) {
          add(&n, "R6", pg + " is not a key of the group file");
          return;
        }
        if (s_.member_pos(static_cast<size_t>(gi), r_) < 0) {
          add(&n, "R6", "rank " + std::to_string(r_) + " is not a member of group " + std::to_string(n.group) +
              " " + members_str(s_.groups.at(n.group)) + " (" + pg + ")");
          return;
        }
      }
      colls_[n.group].push_back(static_cast<uint32_t>(&n - nodes_.data()));
      return;
    }
    const bool send = n.kind == TraceNodeKind::kSend;
    if (n.peer < 0 || n.peer >= world_) {
      add(&n, "R8", std::string(send ? attr::kCommDst : attr::kCommSrc) + " is " + std::to_string(n.peer) + ", not a rank 0.." +
          std::to_string(world_ - 1));
    } else {
      // A rank sending to (or receiving from) itself: the simulator's
      // point-to-point needs another rank (issue 13: interleaved with pp 1).
      if (n.peer == r_)
        add(&n, "R8", std::string(send ? attr::kCommDst : attr::kCommSrc) + " is " + std::to_string(n.peer) +
                          ", the rank itself (a send/recv needs another rank)");
      RankCheck::Message m;
      m.src = send ? r_ : n.peer;
      m.dst = send ? n.peer : r_;
      m.tag = n.tag;
      m.size = n.comm_size;
      m.delta = send ? 1 : -1;
      out_->messages.push_back(m);
    }
    if (n.tag < 0) add(&n, "R8", std::string(attr::kCommTag) + " is " + std::to_string(n.tag) + " < 0");
  }

  // R3: Kahn's algorithm; what it cannot order lies on or behind a cycle.
  // Each leftover node has a leftover dependency, so walking those edges
  // from any leftover node must revisit a node: that loop is reported.
  void check_cycles() {
    const uint32_t n = static_cast<uint32_t>(nodes_.size());
    if (n == 0) add(nullptr, "R3", "the file has no nodes: the simulator stops at start (\"No dependancy free nodes found\"); give the rank at least one node");
    std::vector<uint32_t> waiting(n), coff(n + 1, 0), child(dep_.size());
    for (uint32_t i = 0; i < n; ++i) {
      waiting[i] = off_[i + 1] - off_[i];
      for (uint32_t e = off_[i]; e < off_[i + 1]; ++e) ++coff[dep_[e] + 1];
    }
    for (uint32_t i = 0; i < n; ++i) coff[i + 1] += coff[i];
    std::vector<uint32_t> fill(coff.begin(), coff.end() - 1);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t e = off_[i]; e < off_[i + 1]; ++e) child[fill[dep_[e]]++] = i;
    for (uint32_t i = 0; i < n; ++i) if (waiting[i] == 0) topo_.push_back(i);
    for (size_t k = 0; k < topo_.size(); ++k)
      for (uint32_t e = coff[topo_[k]]; e < coff[topo_[k] + 1]; ++e)
        if (--waiting[child[e]] == 0) topo_.push_back(child[e]);
    if (topo_.size() == n) return;
    const size_t stuck = n - topo_.size();
    std::vector<uint32_t> walk(n, 0), pos(n, 0), path;
    uint32_t walks = 0;
    for (uint32_t s = 0; s < n; ++s) {
      if (waiting[s] == 0 || walk[s] != 0) continue;
      ++walks;
      path.clear();
      for (uint32_t cur = s;;) {
        walk[cur] = walks;
        pos[cur] = static_cast<uint32_t>(path.size());
        path.push_back(cur);
        uint32_t next = cur;
        for (uint32_t e = off_[cur]; e < off_[cur + 1]; ++e) if (waiting[dep_[e]] != 0) { next = dep_[e]; break; }
        if (walk[next] == 0) { cur = next; continue; }
        if (walk[next] == walks) {  // a new loop: path[pos[next]..] back to next
          std::string loop;
          const size_t len = path.size() - pos[next];
          for (size_t k = pos[next]; k < path.size() && k < pos[next] + 8; ++k) loop += std::to_string(nodes_[path[k]].id) + " -> ";
          loop += len > 8 ? "... -> " : "";
          add(&nodes_[next], "R3", "dependency cycle of " + std::to_string(len) + " nodes: " + loop +
              std::to_string(nodes_[next].id) + " (each waits on the next); " + std::to_string(stuck) +
              " nodes of this rank can never run");
        }
        break;  // otherwise it joined an earlier walk: nothing new
      }
    }
  }

  // What the cross-rank rules keep: R7 signatures for the groups the rank
  // is a member of, R8 counts per key (summed within the rank).
  void summarize() {
    for (const auto& [g, idx] : colls_) {
      const int64_t gi = s_.group_index(g);
      if (gi < 0 || s_.member_pos(static_cast<size_t>(gi), r_) < 0) continue;  // R7 compares members only
      RankCheck::Sequence q;
      q.group = g;
      q.hash = kSeqSeed;
      for (uint32_t i : idx) q.hash = seq_step(q.hash, static_cast<int>(nodes_[i].coll), nodes_[i].comm_size);
      q.count = idx.size();
      out_->sequences.push_back(q);
    }
    auto& m = out_->messages;
    auto key = [](const RankCheck::Message& x) { return std::tie(x.src, x.dst, x.tag, x.size); };
    std::sort(m.begin(), m.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
    size_t w = 0;
    for (size_t i = 0; i < m.size(); ++i) {
      if (w > 0 && key(m[w - 1]) == key(m[i])) m[w - 1].delta += m[i].delta;
      else m[w++] = m[i];
    }
    m.resize(w);
    std::erase_if(m, [](const RankCheck::Message& x) { return x.delta == 0; });
  }

  // R7b: consecutive collectives (by id) on a group must be ordered by a
  // dependency path, or the simulator may issue them in either order. One
  // pass per group in topological order: best[x] = highest position of a
  // collective of that group that is x or an ancestor of x.
  void check_chaining() {
    if (topo_.size() != nodes_.size()) return;  // cyclic: R3 said so
    std::vector<int32_t> best(nodes_.size());
    std::vector<int32_t> posof(nodes_.size(), -1);
    for (const auto& [g, idx] : colls_) {
      if (idx.size() < 2) continue;
      for (size_t k = 0; k < idx.size(); ++k) posof[idx[k]] = static_cast<int32_t>(k);
      int64_t bad = 0;
      std::string first;
      const TraceNode* first_b = nullptr;
      for (uint32_t x : topo_) {
        int32_t up = -1;  // best over strict ancestors
        for (uint32_t e = off_[x]; e < off_[x + 1]; ++e) up = std::max(up, best[dep_[e]]);
        best[x] = std::max(up, posof[x]);
        if (posof[x] <= 0 || up == posof[x] - 1 || bad++) continue;
        const TraceNode& prev = nodes_[idx[posof[x] - 1]];
        first = up < posof[x] - 1
                    ? "collective on group " + std::to_string(g) + " has no dependency path from node " +
                          std::to_string(prev.id) + " (" + prev.name + "), the previous collective on the group by id;"
                    : "collective on group " + std::to_string(g) + " depends on a collective of higher id on the group;";
        first_b = &nodes_[x];
      }
      for (uint32_t i : idx) posof[i] = -1;
      if (!bad) continue;
      add(first_b, "R7b", first +
          " the simulator may issue them in either order (" + std::to_string(bad) + " such pairs on this group)", Severity::kWarning);
    }
  }

  const StreamingValidator::State& s_;
  const int64_t world_;
  const DecodedTrace& t_;
  const std::vector<TraceNode>& nodes_;
  const int64_t r_;
  RankCheck* out_;
  std::vector<uint32_t> off_, dep_;  // CSR: resolved deps of node i are dep_[off_[i] .. off_[i+1])
  std::vector<uint32_t> topo_;       // Kahn order; shorter than the node list when cyclic
  std::map<int64_t, std::vector<uint32_t>> colls_;  // group -> collective indices, ascending id
};

// ------------------------------------------------------------- cross-rank

// finish(): archive and group file, then R7 and R8 from the summaries,
// naming nodes through the loader.
class Finisher {
 public:
  explicit Finisher(StreamingValidator::State& s) : s_(s) {}

  ValidationReport run() {
    check_archive();
    check_group_file();
    // Kept findings are the first kMaxKept: only those need their nodes.
    const int64_t before = s_.archive.errors() + s_.per_rank.errors();
    budget_ = static_cast<int64_t>(ValidationReport::kMaxKept) - std::min<int64_t>(before, ValidationReport::kMaxKept);
    find_sequence_mismatches();
    find_unmatched_messages();
    resolve_nodes();
    report_sequences();
    report_messages();
    ValidationReport out = std::move(s_.archive);
    out.append(s_.per_rank);
    out.append(cross_);
    return out;
  }

 private:
  // R9: missing ranks as ranges between the fed and undecodable ones: a
  // corrupt world_size must not mean 2^40 lines (or loop iterations).
  void check_archive() {
    if (!s_.world_fixed) {  // nothing fed with a rank, no world_size given
      s_.archive.add(make_violation(-1, nullptr, "R9", "no trace to validate"));
      s_.world = 0;
      return;
    }
    const int64_t world = s_.world;
    std::vector<int64_t> known;
    s_.fed.append_to(&known);
    for (int64_t r : s_.undecodable) known.push_back(r);
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    for (int64_t r = 0; r < world;) {
      auto it = std::lower_bound(known.begin(), known.end(), r);
      if (it != known.end() && *it == r) { ++r; continue; }
      const int64_t e = it == known.end() ? world : std::min(*it, world);  // [r, e) missing
      const std::string what = e - r == 1 ? "rank " + std::to_string(r) + " is missing"
                                          : "ranks " + std::to_string(r) + ".." + std::to_string(e - 1) + " are missing";
      s_.archive.add(make_violation(r, nullptr, "R9", what + " (" + attr::kWorldSize + " " + std::to_string(world) + " needs ranks 0.." +
                                    std::to_string(world - 1) + ")"));
      r = e;
    }
  }

  // R6, the file itself: keys >= 1, members valid, distinct, non-empty.
  void check_group_file() {
    if (s_.opt.groups_unavailable) return;
    const int64_t world = s_.world;
    for (const auto& [key, members] : s_.groups) {
      const std::string g = "group file: group " + std::to_string(key);
      auto add = [&](std::string m) { s_.archive.add(make_violation(-1, nullptr, "R6", std::move(m))); };
      if (key < 1) add(g + ": key must be >= 1 (\"0\" and \"\" mean all ranks to the simulator)");
      if (members.empty()) add(g + " has no members");
      std::set<int64_t> seen;
      for (int64_t m : members) {
        // world 0: no trace file says it (a part a --ranks shard left empty): members unchecked.
        if (m < 0 || (world > 0 && m >= world)) add(g + ": member " + std::to_string(m) + " is not a rank 0.." + std::to_string(world - 1));
        else if (!seen.insert(m).second) add(g + ": member " + std::to_string(m) + " is listed twice");
      }
    }
  }

  // ---- R7: per group, members with equal signatures form classes; the
  // largest is taken as right (ties: the one holding the lowest rank) and
  // every other member is reported, ascending rank, at its first difference
  // from the reference class's lowest rank.
  struct SeqFinding {
    size_t gi;
    int64_t rank, ref;
    size_t agree;                           // members in the reference class
    StreamingValidator::State::Slot mine, theirs;
    bool detailed = false;
    // Resolved: 0 differ at k, 1 a prefix of the reference, 2 longer; -1 not.
    int kind = -1;
    size_t k = 0;
    NodeRef node, ref_node;  // ref_node: the reference's #k (kinds 0, 1)
    bool has_node = false, has_ref_node = false;
    std::string why;         // why unresolved
  };

  void find_sequence_mismatches() {
    for (size_t gi = 0; gi < s_.gkeys.size(); ++gi) {
      const auto& mem = s_.members[gi];
      struct M { int64_t rank; StreamingValidator::State::Slot slot; };
      std::vector<M> present;
      bool used = false;
      for (size_t p = 0; p < mem.size(); ++p) {
        if (!s_.fed.contains(mem[p])) continue;  // missing, undecodable or outside: reported elsewhere
        const auto& sl = s_.slots[s_.slot_off[gi] + p];
        used |= sl.count > 0;
        present.push_back({mem[p], sl});
      }
      if (!used) continue;
      auto sig = [](const M& m) { return std::make_pair(m.slot.count, m.slot.hash); };
      std::vector<M> by_sig = present;
      std::stable_sort(by_sig.begin(), by_sig.end(), [&](const M& a, const M& b) { return sig(a) < sig(b); });
      // Runs of equal signatures (each ascending rank, so its first is its lowest).
      size_t best_at = 0, best_len = 0, runs = 0;
      for (size_t i = 0; i < by_sig.size();) {
        size_t j = i;
        while (j < by_sig.size() && sig(by_sig[j]) == sig(by_sig[i])) ++j;
        ++runs;
        if (j - i > best_len || (j - i == best_len && by_sig[i].rank < by_sig[best_at].rank)) { best_at = i; best_len = j - i; }
        i = j;
      }
      if (runs < 2) continue;
      const M& ref = by_sig[best_at];
      for (const M& m : present) {
        if (sig(m) == sig(ref)) continue;
        if (budget_ <= 0) {  // not listed: counted only
          cross_.add_unlisted("R7", Severity::kError, 1);
          continue;
        }
        SeqFinding f;
        f.gi = gi;
        f.rank = m.rank;
        f.ref = ref.rank;
        f.agree = best_len;
        f.mine = m.slot;
        f.theirs = ref.slot;
        f.detailed = true;
        --budget_;
        seq_.push_back(std::move(f));
      }
    }
  }

  // ---- R8: keys whose sends and recvs do not balance, both ends fed. An
  // unmatched end is one of the last |balance| sends (or recvs) of its key
  // in file order, as validate_traces has always named them.
  struct MsgFinding {
    MsgKey key;
    bool send;
    int64_t surplus;     // |balance|
    int64_t detailed;    // how many of the surplus ends get their node
    bool hint_needed = false;    // its first loose end is another finding's near miss
    std::vector<NodeRef> nodes;  // resolved loose ends, in file order
    std::string why;
  };

  void find_unmatched_messages() {
    std::vector<std::pair<MsgKey, int64_t>> loose;
    for (const auto& [k, b] : s_.msgs)
      if (b != 0 && s_.fed.contains(k.src) && s_.fed.contains(k.dst)) loose.emplace_back(k, b);
    std::sort(loose.begin(), loose.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (bool send : {true, false}) {
      for (const auto& [k, b] : loose) {
        if ((b > 0) != send) continue;
        MsgFinding f;
        f.key = k;
        f.send = send;
        f.surplus = b > 0 ? b : -b;
        f.detailed = std::min(f.surplus, budget_);
        budget_ -= f.detailed;
        msg_.push_back(std::move(f));
        // The near miss for the other side: the first loose key between the two ranks.
        auto& near = (send ? near_send_ : near_recv_)[{k.src, k.dst}];
        if (near == 0) near = msg_.size();  // 1-based index into msg_
      }
    }
    // Each detailed end names the first loose end of the other side between
    // the same ranks: make sure that one is resolved too.
    for (const MsgFinding& f : msg_) {
      if (f.detailed == 0) continue;
      auto& other = f.send ? near_recv_ : near_send_;
      auto it = other.find({f.key.src, f.key.dst});
      if (it != other.end()) msg_[it->second - 1].hint_needed = true;
    }
  }

  // ---- Reading ranks back. Pass A: the reference sequences of the
  // detailed R7 findings (one per distinct signature); pass B: the ranks
  // at fault (R7) and the ends of loose messages (R8); pass C: the
  // reference's node where each R7 finding differs.
  const DecodedTrace* load(int64_t rank, DecodedTrace* scratch, std::string* why) {
    if (!s_.loader) { *why = "no loader to read the rank again"; return nullptr; }
    const DecodedTrace* t = s_.loader(rank, scratch);
    if (!t) *why = "rank " + std::to_string(rank) + " could not be read again";
    return t;
  }

  using Compact = std::vector<std::pair<int, int64_t>>;

  void resolve_nodes() {
    // Pass A.
    std::map<std::pair<uint64_t, uint64_t>, Compact> refs;  // (count, hash) -> sequence
    std::map<int64_t, std::vector<SeqFinding*>> by_ref;
    for (SeqFinding& f : seq_) {
      if (!f.detailed) continue;
      if (refs.emplace(std::make_pair(f.theirs.count, f.theirs.hash), Compact{}).second) by_ref[f.ref].push_back(&f);
    }
    std::map<std::pair<uint64_t, uint64_t>, bool> ref_ok;
    for (const auto& [rank, fs] : by_ref) {
      DecodedTrace scratch;
      std::string why;
      const DecodedTrace* t = load(rank, &scratch, &why);
      for (SeqFinding* f : fs) {
        const auto sig = std::make_pair(f->theirs.count, f->theirs.hash);
        if (!t) { f->why = why; continue; }
        Compact c;
        uint64_t h = kSeqSeed;
        for (uint32_t i : collectives_on(*t, s_.gkeys[f->gi])) {
          const TraceNode& n = t->trace.nodes[i];
          c.emplace_back(static_cast<int>(n.coll), n.comm_size);
          h = seq_step(h, c.back().first, c.back().second);
        }
        if (c.size() != sig.first || h != sig.second) { f->why = "rank " + std::to_string(rank) + " reads differently now"; continue; }
        refs[sig] = std::move(c);
        ref_ok[sig] = true;
      }
    }
    // Pass B.
    std::map<int64_t, std::vector<SeqFinding*>> by_rank;
    for (SeqFinding& f : seq_) {
      if (!f.detailed) continue;
      if (!ref_ok.count({f.theirs.count, f.theirs.hash})) {
        if (f.why.empty()) f.why = "the reference sequence could not be read again";
        continue;
      }
      by_rank[f.rank].push_back(&f);
    }
    std::map<int64_t, std::vector<MsgFinding*>> msg_by_rank;
    for (MsgFinding& f : msg_) {
      if (f.detailed > 0 || f.hint_needed) msg_by_rank[f.send ? f.key.src : f.key.dst].push_back(&f);
    }
    std::set<int64_t> ranks;
    for (const auto& [r, fs] : by_rank) ranks.insert(r);
    for (const auto& [r, fs] : msg_by_rank) ranks.insert(r);
    std::map<int64_t, std::vector<SeqFinding*>> need_ref_node;
    for (int64_t r : ranks) {
      DecodedTrace scratch;
      std::string why;
      const DecodedTrace* t = load(r, &scratch, &why);
      if (auto it = by_rank.find(r); it != by_rank.end()) {
        for (SeqFinding* f : it->second) {
          if (!t) { f->why = why; continue; }
          resolve_sequence(*t, refs.at({f->theirs.count, f->theirs.hash}), f);
          if (f->kind == 0 || f->kind == 1) need_ref_node[f->ref].push_back(f);
        }
      }
      if (auto it = msg_by_rank.find(r); it != msg_by_rank.end()) {
        if (!t) { for (MsgFinding* f : it->second) f->why = why; }
        else resolve_messages(*t, it->second);
      }
    }
    // Pass C.
    for (const auto& [rank, fs] : need_ref_node) {
      DecodedTrace scratch;
      std::string why;
      const DecodedTrace* t = load(rank, &scratch, &why);
      for (SeqFinding* f : fs) {
        if (!t) { f->why = why; f->kind = -1; continue; }
        const auto idx = collectives_on(*t, s_.gkeys[f->gi]);
        if (f->k >= idx.size()) { f->why = "rank " + std::to_string(rank) + " reads differently now"; f->kind = -1; continue; }
        f->ref_node = ref_of(t->trace.nodes[idx[f->k]]);
        f->has_ref_node = true;
      }
    }
  }

  // The first difference of f's rank (t) from the reference sequence b.
  void resolve_sequence(const DecodedTrace& t, const Compact& b, SeqFinding* f) {
    const auto a = collectives_on(t, s_.gkeys[f->gi]);
    const auto& an = t.trace.nodes;
    size_t k = 0;
    while (k < a.size() && k < b.size() && static_cast<int>(an[a[k]].coll) == b[k].first && an[a[k]].comm_size == b[k].second) ++k;
    f->k = k;
    if (k < a.size() && k < b.size()) {
      f->kind = 0;
      f->node = ref_of(an[a[k]]);
      f->has_node = true;
    } else if (k < b.size()) {
      f->kind = 1;
      if (!a.empty()) { f->node = ref_of(an[a.back()]); f->has_node = true; }
    } else if (k < a.size()) {
      f->kind = 2;
      f->node = ref_of(an[a[k]]);
      f->has_node = true;
    } else {
      f->why = "rank " + std::to_string(t.rank) + " reads differently now";
    }
  }

  // The loose ends of fs on rank t: the last `surplus` of each key's ends.
  void resolve_messages(const DecodedTrace& t, const std::vector<MsgFinding*>& fs) {
    struct Want { MsgFinding* f; int64_t total = 0, seen = 0; };
    struct PairHash { size_t operator()(const std::pair<MsgKey, bool>& p) const { return MsgKeyHash()(p.first) ^ p.second; } };
    std::unordered_map<std::pair<MsgKey, bool>, Want, PairHash> want;
    for (MsgFinding* f : fs) want[{f->key, f->send}].f = f;
    auto key_of = [&](const TraceNode& n, bool* send) -> std::optional<MsgKey> {
      if (n.kind != TraceNodeKind::kSend && n.kind != TraceNodeKind::kRecv) return std::nullopt;
      if (n.peer < 0 || n.peer >= s_.world) return std::nullopt;
      *send = n.kind == TraceNodeKind::kSend;
      return MsgKey{*send ? t.rank : n.peer, *send ? n.peer : t.rank, n.tag, n.comm_size};
    };
    for (int pass = 0; pass < 2; ++pass) {
      for (const TraceNode& n : t.trace.nodes) {
        bool send = false;
        auto k = key_of(n, &send);
        if (!k) continue;
        auto it = want.find({*k, send});
        if (it == want.end()) continue;
        Want& w = it->second;
        if (pass == 0) { ++w.total; continue; }
        const int64_t j = w.seen++ - (w.total - w.f->surplus);  // index among the loose ends
        const int64_t keep = std::max<int64_t>(w.f->detailed, w.f->hint_needed ? 1 : 0);
        if (j >= 0 && j < keep) w.f->nodes.push_back(ref_of(n));
      }
    }
    for (auto& [k, w] : want)
      if (w.f->nodes.empty()) w.f->why = "rank " + std::to_string(t.rank) + " reads differently now";
  }

  void report_sequences() {
    for (const SeqFinding& f : seq_) {
      const int64_t g = s_.gkeys[f.gi];
      const std::string who = "rank " + std::to_string(f.ref) + (f.agree > 1 ? " (and " + std::to_string(f.agree - 1) + " more members)" : "");
      const std::string tail = "; collectives are matched by issue order, so group " + std::to_string(g) + " hangs";
      const std::string on = " collectives on group " + std::to_string(g) + ", ";
      if (f.kind == 0 && f.has_ref_node) {
        add(f.rank, &f.node, "R7", "on group " + std::to_string(g) + " issues " + coll_desc(f.k, f.node, false) + " where " +
            who + " issues " + coll_desc(f.k, f.ref_node) + tail);
      } else if (f.kind == 1 && f.has_ref_node) {
        add(f.rank, f.has_node ? &f.node : nullptr, "R7", "issues " + std::to_string(f.mine.count) + on + who + " issues " +
            std::to_string(f.theirs.count) + "; the first one missing is " + coll_desc(f.k, f.ref_node) + tail);
      } else if (f.kind == 2) {
        add(f.rank, &f.node, "R7", "issues " + std::to_string(f.mine.count) + on + who + " only " +
            std::to_string(f.theirs.count) + "; the first extra is " + coll_desc(f.k, f.node, false) + tail);
      } else {
        add(f.rank, nullptr, "R7", "issues " + std::to_string(f.mine.count) + on + who + " issues " +
            std::to_string(f.theirs.count) + ", in another (type, size) sequence" +
            (f.detailed ? " (first difference not named: " + f.why + ")" : "") + tail);
      }
    }
  }

  void report_messages() {
    auto hint = [&](const MsgFinding& f) -> std::string {
      auto& other = f.send ? near_recv_ : near_send_;
      auto it = other.find({f.key.src, f.key.dst});
      if (it == other.end()) return "";
      const MsgFinding& e = msg_[it->second - 1];
      const std::string tail = " with tag " + std::to_string(e.key.tag) + " size " + std::to_string(e.key.size);
      const char* what = e.send ? "send" : "recv";
      if (e.nodes.empty()) return "; nearest: unmatched " + std::string(what) + tail;
      return "; nearest: unmatched " + std::string(what) + " node " + std::to_string(e.nodes[0].id) + " (" + e.nodes[0].name + ")" + tail;
    };
    for (const MsgFinding& f : msg_) {
      const int64_t rank = f.send ? f.key.src : f.key.dst;
      const int64_t peer = f.send ? f.key.dst : f.key.src;
      const std::string base = std::string(f.send ? "send to rank " : "recv from rank ") + std::to_string(peer) + " tag " +
                               std::to_string(f.key.tag) + " size " + std::to_string(f.key.size) + " has no matching " +
                               (f.send ? "recv" : "send") + " on rank " + std::to_string(peer);
      if (f.detailed == 0) {  // beyond the listed findings: counted only
        cross_.add_unlisted("R8", Severity::kError, f.surplus);
        continue;
      }
      const std::string h = hint(f);
      for (int64_t j = 0; j < f.surplus; ++j) {
        if (j >= f.detailed) { cross_.add_unlisted("R8", Severity::kError, f.surplus - j); break; }
        const bool named = j < static_cast<int64_t>(f.nodes.size());
        add(rank, named ? &f.nodes[static_cast<size_t>(j)] : nullptr, "R8",
            base + h + (named ? "" : " (node not named: " + f.why + ")"));
      }
    }
  }

  void add(int64_t rank, const NodeRef* n, const char* rule, std::string msg) {
    cross_.add(make_violation(rank, n, rule, std::move(msg)));
  }

  StreamingValidator::State& s_;
  int64_t budget_ = 0;
  std::vector<SeqFinding> seq_;
  std::vector<MsgFinding> msg_;
  std::map<std::pair<int64_t, int64_t>, size_t> near_send_, near_recv_;  // (src, dst) -> 1-based index into msg_
  ValidationReport cross_;
};

}  // namespace

// ------------------------------------------------------------------ API

StreamingValidator::StreamingValidator(const GroupTable& groups, ValidateOptions options, RankLoader loader)
    : s_(std::make_unique<State>(groups, std::move(options), std::move(loader))) {
  s_->undecodable = s_->opt.undecodable_ranks;
}

StreamingValidator::~StreamingValidator() = default;

int64_t StreamingValidator::world_size() const { return s_->world_fixed ? s_->world : 0; }

void StreamingValidator::add_undecodable(int64_t rank) { s_->undecodable.insert(rank); }

RankCheck StreamingValidator::check(const DecodedTrace& trace) const {
  RankCheck out;
  int64_t world = s_->world;
  if (!s_->world_fixed) {  // what take() will fix it to
    world = trace.meta.world_size > 0 ? trace.meta.world_size
                                      : (s_->opt.assumed_world_size > 0 ? s_->opt.assumed_world_size : trace.rank + 1);
  }
  RankChecker(*s_, world, trace, &out).run();
  return out;
}

void StreamingValidator::add_rank(const DecodedTrace& trace) {
  if (trace.rank >= 0) s_->fix_world(trace.rank, trace.meta.world_size);
  take(check(trace));
}

void StreamingValidator::take(RankCheck&& c) {
  State& s = *s_;
  auto r9 = [&](int64_t rank, std::string m) { s.archive.add(make_violation(rank, nullptr, "R9", std::move(m))); };
  if (c.rank < 0) { r9(-1, "a trace has no rank attribute in its metadata"); return; }
  s.fix_world(c.rank, c.world_size);
  const int64_t r = c.rank;
  const std::string rs = std::to_string(r);
  if (r >= s.world) { r9(r, "rank " + rs + " is outside " + attr::kWorldSize + " " + std::to_string(s.world)); return; }
  if (!s.fed.insert(r)) { r9(r, "rank " + rs + " is given twice"); return; }
  if (!s.have_ref) { s.have_ref = true; s.ref_rank = r; s.ref_hash = c.config_hash; }
  if (c.world_size != s.world) {
    r9(r, std::string(attr::kWorldSize) + (c.world_size ? " is " + std::to_string(c.world_size) : std::string(" is absent")) +
              ", expected " + std::to_string(s.world));
  }
  if (c.config_hash != s.ref_hash) {
    r9(r, std::string(attr::kConfigHash) + " \"" + c.config_hash + "\" differs from rank " + std::to_string(s.ref_rank) + "'s \"" + s.ref_hash +
              "\" (files of different jobs)");
  }
  s.per_rank.append(c.findings);
  for (const RankCheck::Sequence& q : c.sequences) {
    const int64_t gi = s.group_index(q.group);
    const int64_t p = gi < 0 ? -1 : s.member_pos(static_cast<size_t>(gi), r);
    if (p < 0) continue;
    State::Slot& sl = s.slots[s.slot_off[static_cast<size_t>(gi)] + static_cast<size_t>(p)];
    sl.hash = q.hash;
    sl.count = q.count;
  }
  for (const RankCheck::Message& m : c.messages) {
    const MsgKey k{m.src, m.dst, m.tag, m.size};
    auto [it, fresh] = s.msgs.try_emplace(k, 0);
    it->second += m.delta;
    if (it->second == 0) s.msgs.erase(it);
  }
}

ValidationReport StreamingValidator::finish() {
  if (s_->finished) return {};
  s_->finished = true;
  ValidationReport out = Finisher(*s_).run();
  // The summaries are spent.
  s_->msgs.clear();
  s_->slots.clear();
  return out;
}

ValidationReport validate_traces(const std::vector<DecodedTrace>& ranks, const GroupTable& groups,
                                 const ValidateOptions& options) {
  std::vector<const DecodedTrace*> by_rank;
  for (const DecodedTrace& t : ranks) if (t.rank >= 0) by_rank.push_back(&t);
  std::stable_sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  ValidateOptions o = options;
  if (o.assumed_world_size <= 0 && !by_rank.empty()) o.assumed_world_size = by_rank.back()->rank + 1;
  // The first trace of a rank is the one checked (a second is "given twice").
  auto loader = [&by_rank](int64_t rank, DecodedTrace*) -> const DecodedTrace* {
    auto it = std::lower_bound(by_rank.begin(), by_rank.end(), rank, [](const DecodedTrace* t, int64_t r) { return t->rank < r; });
    return it != by_rank.end() && (*it)->rank == rank ? *it : nullptr;
  };
  StreamingValidator v(groups, std::move(o), loader);
  for (const DecodedTrace& t : ranks) if (t.rank < 0) v.add_rank(t);
  for (const DecodedTrace* t : by_rank) v.add_rank(*t);
  return v.finish();
}

void ValidationReport::add(Violation v) {
  ++counts_[v.rule];
  const bool err = v.severity == Severity::kError;
  ++(err ? errors_ : warnings_);
  std::vector<Violation>& kept = err ? errs_ : warns_;
  if (kept.size() < kMaxKept) kept.push_back(std::move(v));
}

void ValidationReport::add_unlisted(const std::string& rule, Severity severity, int64_t n) {
  if (n <= 0) return;
  counts_[rule] += n;
  (severity == Severity::kError ? errors_ : warnings_) += n;
}

void ValidationReport::append(const ValidationReport& o) {
  for (const auto& v : o.errs_) if (errs_.size() < kMaxKept) errs_.push_back(v);
  for (const auto& v : o.warns_) if (warns_.size() < kMaxKept) warns_.push_back(v);
  for (const auto& [rule, n] : o.counts_) counts_[rule] += n;
  errors_ += o.errors_;
  warnings_ += o.warnings_;
}

std::vector<Violation> ValidationReport::listed() const {
  std::vector<Violation> all = errs_;
  all.insert(all.end(), warns_.begin(), warns_.end());
  return all;
}

std::string ValidationReport::format(const Violation& v) {
  std::string s = (v.severity == Severity::kError ? "error " : "warning ") + v.rule;
  if (v.rank >= 0) s += " rank " + std::to_string(v.rank);
  if (v.has_node) s += " node " + std::to_string(v.node_id) + " (" + v.node_name + ")";
  return s + ": " + v.message;
}

std::string ValidationReport::text(size_t limit) const {
  std::string s;
  const std::vector<Violation> all = listed();
  const int64_t total = errors_ + warnings_;
  for (size_t i = 0; i < all.size() && i < limit; ++i) s += format(all[i]) + "\n";
  if (total > static_cast<int64_t>(std::min(limit, all.size()))) {
    s += "(" + std::to_string(std::min(limit, all.size())) + " of " + std::to_string(total) + " shown)\n";
  }
  s += std::to_string(errors_) + (errors_ == 1 ? " error, " : " errors, ") + std::to_string(warnings_) +
       (warnings_ == 1 ? " warning" : " warnings");
  std::string sep = ": ";
  for (const auto& [rule, n] : counts_) { s += sep + rule + " " + std::to_string(n); sep = ", "; }
  return s + "\n";
}

std::string ValidationReport::json() const {
  nlohmann::json j = nlohmann::json::object();
  j["ok"] = ok();
  j["errors"] = errors_;
  j["warnings"] = warnings_;
  j["counts"] = nlohmann::json::object();
  for (const auto& [rule, n] : counts_) j["counts"][rule] = n;
  nlohmann::json list = nlohmann::json::array();
  for (const Violation& v : listed()) {
    nlohmann::json e = {{"severity", v.severity == Severity::kError ? "error" : "warning"},
                        {"rule", v.rule},
                        {"rank", v.rank >= 0 ? nlohmann::json(v.rank) : nlohmann::json(nullptr)},
                        {"node_id", v.has_node ? nlohmann::json(v.node_id) : nlohmann::json(nullptr)},
                        {"node_name", v.has_node ? nlohmann::json(v.node_name) : nlohmann::json(nullptr)},
                        {"message", v.message}};
    list.push_back(std::move(e));
  }
  j["violations_listed"] = list.size();
  j["truncated"] = static_cast<int64_t>(list.size()) < errors_ + warnings_;
  j["violations"] = std::move(list);
  // replace: a name from an edited struct may not be UTF-8, and dump()
  // would otherwise throw (abort, under JSON_NOEXCEPTION).
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sc
