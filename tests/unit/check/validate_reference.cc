// The in-memory validator as it was before validation streamed (commit
// 9c8d351, core/check/validate.cc): every rank held at once, R7 comparing
// full sequences, R8 holding every send and recv node. Kept as the oracle
// for validate_stream_test.cc, which checks that the streaming validator
// reports the same findings on every deliberately broken archive. Test
// code only; not built into the library.
#include "validate_reference.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace sc::testing::reference {
namespace {

std::string node_type_str(int t) {
  static const char* const kNames[] = {"INVALID_NODE",   "METADATA_NODE", "MEM_LOAD_NODE",
                                       "MEM_STORE_NODE", "COMP_NODE",     "COMM_SEND_NODE",
                                       "COMM_RECV_NODE", "COMM_COLL_NODE"};
  const std::string n = t >= 0 && t < 8 ? kNames[t] : "UNKNOWN";
  return n + "(" + std::to_string(t) + ")";
}

std::string coll_str(int t) {
  static const char* const kNames[] = {"ALL_REDUCE", "REDUCE",    "ALL_GATHER",     "GATHER",
                                       "SCATTER",    "BROADCAST", "ALL_TO_ALL",     "REDUCE_SCATTER",
                                       "REDUCE_SCATTER_BLOCK", "BARRIER"};
  const std::string n = t >= 0 && t < 10 ? kNames[t] : "UNKNOWN";
  return n + "(" + std::to_string(t) + ")";
}

bool supported_kind(TraceNodeKind k) {
  const int t = static_cast<int>(k);
  return t >= 4 && t <= 7;
}

bool supported_coll(CollectiveType c) {
  const int t = static_cast<int>(c);
  return t == 0 || t == 2 || t == 6 || t == 7;
}

// "#3 ALL_REDUCE(0) of 4096 bytes (node 17 name)"
// label: false when the finding already names the node.
std::string coll_desc(size_t k, const TraceNode& n, bool label = true) {
  return "#" + std::to_string(k) + " " + coll_str(static_cast<int>(n.coll)) + " of " + std::to_string(n.comm_size) +
         " bytes" + (label ? " (node " + std::to_string(n.id) + " " + n.name + ")" : "");
}

std::string members_str(const std::vector<int64_t>& m) {
  std::string s = "[";
  for (size_t i = 0; i < m.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(m[i]);
  return s + (m.size() > 16 ? ", ...]" : "]");
}

// One decoded rank plus the indices the rules share.
struct RankView {
  const DecodedTrace* t = nullptr;
  int64_t rank = 0;
  std::vector<uint32_t> off, dep;  // CSR: resolved deps of node i are dep[off[i] .. off[i+1])
  std::vector<uint32_t> topo;      // Kahn order; shorter than the node list when cyclic
  std::map<int64_t, std::vector<uint32_t>> colls;  // group -> collective indices, ascending id
};

class Validator {
 public:
  Validator(const GroupTable& g, const ValidateOptions& o) : groups_(g), opt_(o) {}

  ValidationReport run(const std::vector<DecodedTrace>& ranks) {
    check_archive(ranks);
    check_group_file();
    for (RankView& v : views_) check_rank(v);
    check_sequences();
    check_pairs();
    for (RankView& v : views_) check_chaining(v);
    return std::move(rep_);
  }

 private:
  void add(int64_t rank, const TraceNode* n, const char* rule, std::string msg,
           Severity sev = Severity::kError) {
    Violation v;
    v.rank = rank;
    if (n) { v.has_node = true; v.node_id = n->id; v.node_name = n->name; }
    v.rule = rule;
    v.severity = sev;
    v.message = std::move(msg);
    rep_.add(std::move(v));
  }

  // R9: which ranks we have, and whether their files belong together.
  void check_archive(const std::vector<DecodedTrace>& ranks) {
    std::vector<const DecodedTrace*> by_rank;
    for (const DecodedTrace& t : ranks) {
      if (t.rank < 0) { add(-1, nullptr, "R9", "a trace has no rank attribute in its metadata"); continue; }
      by_rank.push_back(&t);
    }
    std::stable_sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
    world_ = opt_.world_size > 0 ? opt_.world_size : (by_rank.empty() ? 0 : by_rank[0]->meta.world_size);
    if (world_ < 1) {
      if (by_rank.empty()) { add(-1, nullptr, "R9", "no trace to validate"); return; }
      // Still check what we can: take the ranks present as the world.
      world_ = by_rank.back()->rank + 1;
      add(-1, nullptr, "R9", "world_size unknown (not in the metadata); assuming " + std::to_string(world_));
    }
    const DecodedTrace* ref = nullptr;
    for (const DecodedTrace* t : by_rank) {
      const std::string r = std::to_string(t->rank);
      if (t->rank >= world_) { add(t->rank, nullptr, "R9", "rank " + r + " is outside world_size " + std::to_string(world_)); continue; }
      if (!views_.empty() && views_.back().rank == t->rank) { add(t->rank, nullptr, "R9", "rank " + r + " is given twice"); continue; }
      if (!ref) ref = t;
      if (t->meta.world_size != world_) {
        add(t->rank, nullptr, "R9", (t->meta.world_size ? "world_size is " + std::to_string(t->meta.world_size)
                                                        : std::string("world_size is absent")) + ", expected " + std::to_string(world_));
      }
      if (t->meta.config_hash != ref->meta.config_hash) {
        add(t->rank, nullptr, "R9", "config_hash \"" + t->meta.config_hash + "\" differs from rank " +
            std::to_string(ref->rank) + "'s \"" + ref->meta.config_hash + "\" (files of different jobs)");
      }
      RankView v;
      v.t = t;
      v.rank = t->rank;
      views_.push_back(std::move(v));
    }
    // Missing ranks as ranges between the present and undecodable ones: a
    // corrupt world_size must not mean 2^40 lines (or loop iterations).
    std::set<int64_t> known = opt_.undecodable_ranks;
    for (const RankView& v : views_) known.insert(v.rank);
    for (int64_t r = 0; r < world_;) {
      auto it = known.lower_bound(r);
      if (it != known.end() && *it == r) { ++r; continue; }
      const int64_t e = it == known.end() ? world_ : std::min(*it, world_);  // [r, e) missing
      const std::string what = e - r == 1 ? "rank " + std::to_string(r) + " is missing"
                                          : "ranks " + std::to_string(r) + ".." + std::to_string(e - 1) + " are missing";
      add(r, nullptr, "R9", what + " (world_size " + std::to_string(world_) + " needs ranks 0.." +
          std::to_string(world_ - 1) + ")");
      r = e;
    }
    for (const RankView& v : views_) present_.insert(v.rank);
  }

  // R6, the file itself: keys >= 1, members valid, distinct, non-empty.
  void check_group_file() {
    if (opt_.groups_unavailable) return;
    for (const auto& [key, members] : groups_) {
      const std::string g = "group file: group " + std::to_string(key);
      if (key < 1) add(-1, nullptr, "R6", g + ": key must be >= 1 (\"0\" and \"\" mean all ranks to the simulator)");
      if (members.empty()) add(-1, nullptr, "R6", g + " has no members");
      std::set<int64_t> seen;
      for (int64_t m : members) {
        if (m < 0 || (world_ > 0 && m >= world_)) add(-1, nullptr, "R6", g + ": member " + std::to_string(m) + " is not a rank 0.." + std::to_string(world_ - 1));
        else if (!seen.insert(m).second) add(-1, nullptr, "R6", g + ": member " + std::to_string(m) + " is listed twice");
      }
    }
  }

  // R1-R5 and the per-node parts of R6 and R8.
  void check_rank(RankView& v) {
    const auto& nodes = v.t->trace.nodes;
    const int64_t r = v.rank;
    std::unordered_map<uint64_t, uint32_t> index;  // id -> last node with it (the simulator keeps the last)
    index.reserve(nodes.size());
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      auto [it, fresh] = index.emplace(nodes[i].id, i);
      if (!fresh) {
        add(r, &nodes[i], "R1", "duplicate id: node " + std::to_string(nodes[it->second].id) + " (" +
            nodes[it->second].name + ") has it too; the simulator silently keeps only the last");
        it->second = i;
      }
    }
    v.off.assign(1, 0);
    for (const TraceNode& n : nodes) {
      for (uint64_t d : n.deps) {
        auto it = index.find(d);
        if (it == index.end()) add(r, &n, "R2", "dependency on id " + std::to_string(d) + ", which is not in the file");
        else v.dep.push_back(it->second);
      }
      v.off.push_back(static_cast<uint32_t>(v.dep.size()));
      check_node(v, n);
    }
    check_cycles(v);
    for (auto& [g, idx] : v.colls) {
      std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return nodes[a].id < nodes[b].id; });
    }
  }

  void check_node(RankView& v, const TraceNode& n) {
    const int64_t r = v.rank;
    if (n.name.empty()) add(r, &n, "R5", "node has no name");
    if (!supported_kind(n.kind)) {
      add(r, &n, "R4", "node type " + node_type_str(static_cast<int>(n.kind)) +
          " is not run by the simulator (only COMP, SEND, RECV, COLL nodes are)");
      return;
    }
    if (n.kind == TraceNodeKind::kCompute) {
      if (n.tensor_size < 1) add(r, &n, "R5", "tensor_size is 0 (stalls the simulator's roofline model)");
      if (n.num_ops < 0) add(r, &n, "R5", "num_ops is " + std::to_string(n.num_ops) + " < 0");
      return;
    }
    if (n.comm_size < 0) add(r, &n, "R5", "comm_size is " + std::to_string(n.comm_size) + " < 0");
    if (n.kind == TraceNodeKind::kCollective) {
      if (!supported_coll(n.coll)) {
        add(r, &n, "R4", "collective type " + coll_str(static_cast<int>(n.coll)) +
            " is not run by the simulator (only ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL)");
      }
      const std::string pg = "pg_name \"" + std::to_string(n.group) + "\"";
      if (!opt_.groups_unavailable) {
        auto g = groups_.find(n.group);
        if (g == groups_.end()) {
          add(r, &n, "R6", pg + " is not a key of the group file");
          return;
        }
        if (std::find(g->second.begin(), g->second.end(), r) == g->second.end()) {
          add(r, &n, "R6", "rank " + std::to_string(r) + " is not a member of group " + std::to_string(n.group) +
              " " + members_str(g->second) + " (" + pg + ")");
          return;
        }
      }
      v.colls[n.group].push_back(static_cast<uint32_t>(&n - v.t->trace.nodes.data()));
      return;
    }
    const char* peer = n.kind == TraceNodeKind::kSend ? "comm_dst" : "comm_src";
    if (n.peer < 0 || n.peer >= world_) {
      add(r, &n, "R8", std::string(peer) + " is " + std::to_string(n.peer) + ", not a rank 0.." + std::to_string(world_ - 1));
    } else if (n.peer == r) {
      add(r, &n, "R8", std::string(peer) + " is " + std::to_string(n.peer) + ", the rank itself (a send/recv needs another rank)");
    }
    if (n.tag < 0) add(r, &n, "R8", "comm_tag is " + std::to_string(n.tag) + " < 0");
  }

  // R3: Kahn's algorithm; what it cannot order lies on or behind a cycle.
  // Each leftover node has a leftover dependency, so walking those edges
  // from any leftover node must revisit a node: that loop is reported.
  void check_cycles(RankView& v) {
    const auto& nodes = v.t->trace.nodes;
    const uint32_t n = static_cast<uint32_t>(nodes.size());
    if (n == 0) add(v.rank, nullptr, "R3", "the file has no nodes: the simulator stops at start (\"No dependancy free nodes found\"); give the rank at least one node");
    std::vector<uint32_t> waiting(n), coff(n + 1, 0), child(v.dep.size());
    for (uint32_t i = 0; i < n; ++i) {
      waiting[i] = v.off[i + 1] - v.off[i];
      for (uint32_t e = v.off[i]; e < v.off[i + 1]; ++e) ++coff[v.dep[e] + 1];
    }
    for (uint32_t i = 0; i < n; ++i) coff[i + 1] += coff[i];
    std::vector<uint32_t> fill(coff.begin(), coff.end() - 1);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t e = v.off[i]; e < v.off[i + 1]; ++e) child[fill[v.dep[e]]++] = i;
    for (uint32_t i = 0; i < n; ++i) if (waiting[i] == 0) v.topo.push_back(i);
    for (size_t k = 0; k < v.topo.size(); ++k)
      for (uint32_t e = coff[v.topo[k]]; e < coff[v.topo[k] + 1]; ++e)
        if (--waiting[child[e]] == 0) v.topo.push_back(child[e]);
    if (v.topo.size() == n) return;
    const size_t stuck = n - v.topo.size();
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
        for (uint32_t e = v.off[cur]; e < v.off[cur + 1]; ++e) if (waiting[v.dep[e]] != 0) { next = v.dep[e]; break; }
        if (walk[next] == 0) { cur = next; continue; }
        if (walk[next] == walks) {  // a new loop: path[pos[next]..] back to next
          std::string loop;
          const size_t len = path.size() - pos[next];
          for (size_t k = pos[next]; k < path.size() && k < pos[next] + 8; ++k) loop += std::to_string(nodes[path[k]].id) + " -> ";
          loop += len > 8 ? "... -> " : "";
          add(v.rank, &nodes[next], "R3", "dependency cycle of " + std::to_string(len) + " nodes: " + loop +
              std::to_string(nodes[next].id) + " (each waits on the next); " + std::to_string(stuck) +
              " nodes of this rank can never run");
        }
        break;  // otherwise it joined an earlier walk: nothing new
      }
    }
  }

  // R7: the id-ordered (type, size) sequence on each group must be the
  // same on every member; the largest agreeing set of members is taken as
  // right and every other member is reported at its first difference.
  void check_sequences() {
    std::map<int64_t, const RankView*> by_rank;
    for (const RankView& v : views_) by_rank[v.rank] = &v;
    for (const auto& [g, members] : groups_) {
      using Seq = std::vector<std::pair<int, int64_t>>;
      std::map<Seq, std::vector<const RankView*>> classes;
      bool used = false;
      for (int64_t m : std::set<int64_t>(members.begin(), members.end())) {
        auto it = by_rank.find(m);
        if (it == by_rank.end()) continue;  // missing or undecodable: reported elsewhere
        Seq s;
        auto c = it->second->colls.find(g);
        if (c != it->second->colls.end()) {
          for (uint32_t i : c->second) s.emplace_back(static_cast<int>(it->second->t->trace.nodes[i].coll), it->second->t->trace.nodes[i].comm_size);
        }
        used |= !s.empty();
        classes[std::move(s)].push_back(it->second);
      }
      if (!used || classes.size() < 2) continue;
      const std::vector<const RankView*>* ref = nullptr;
      for (const auto& [s, vs] : classes)
        if (!ref || vs.size() > ref->size() || (vs.size() == ref->size() && vs[0]->rank < (*ref)[0]->rank)) ref = &vs;
      for (const auto& [s, vs] : classes) {
        if (&vs == ref) continue;
        for (const RankView* v : vs) report_divergence(g, *v, *(*ref)[0], ref->size());
      }
    }
  }

  void report_divergence(int64_t g, const RankView& v, const RankView& ref, size_t agree) {
    static const std::vector<uint32_t> kNone;
    auto colls = [&](const RankView& x) -> const std::vector<uint32_t>& { auto c = x.colls.find(g); return c == x.colls.end() ? kNone : c->second; };
    const auto& a = colls(v);
    const auto& b = colls(ref);
    const auto& an = v.t->trace.nodes;
    const auto& bn = ref.t->trace.nodes;
    size_t k = 0;
    while (k < a.size() && k < b.size() && an[a[k]].coll == bn[b[k]].coll && an[a[k]].comm_size == bn[b[k]].comm_size) ++k;
    const std::string who = "rank " + std::to_string(ref.rank) + (agree > 1 ? " (and " + std::to_string(agree - 1) + " more members)" : "");
    const std::string tail = "; collectives are matched by issue order, so group " + std::to_string(g) + " hangs";
    if (k < a.size() && k < b.size()) {
      add(v.rank, &an[a[k]], "R7", "on group " + std::to_string(g) + " issues " + coll_desc(k, an[a[k]], false) + " where " +
          who + " issues " + coll_desc(k, bn[b[k]]) + tail);
    } else if (k < b.size()) {
      add(v.rank, a.empty() ? nullptr : &an[a.back()], "R7", "issues " + std::to_string(a.size()) + " collectives on group " +
          std::to_string(g) + ", " + who + " issues " + std::to_string(b.size()) + "; the first one missing is " + coll_desc(k, bn[b[k]]) + tail);
    } else {
      add(v.rank, &an[a[k]], "R7", "issues " + std::to_string(a.size()) + " collectives on group " + std::to_string(g) + ", " +
          who + " only " + std::to_string(b.size()) + "; the first extra is " + coll_desc(k, an[a[k]], false) + tail);
    }
  }

  // R8: every (src, dst, tag, size) key needs as many recvs as sends.
  void check_pairs() {
    using Key = std::tuple<int64_t, int64_t, int32_t, int64_t>;
    struct End { const RankView* v; const TraceNode* n; };
    std::map<Key, std::pair<std::vector<End>, std::vector<End>>> keys;  // sends, recvs
    for (const RankView& v : views_)
      for (const TraceNode& n : v.t->trace.nodes) {
        if (n.kind != TraceNodeKind::kSend && n.kind != TraceNodeKind::kRecv) continue;
        if (n.peer < 0 || n.peer >= world_ || !present_.count(n.peer)) continue;  // reported above, or unknowable
        const bool send = n.kind == TraceNodeKind::kSend;
        auto& side = keys[{send ? v.rank : n.peer, send ? n.peer : v.rank, n.tag, n.comm_size}];
        (send ? side.first : side.second).push_back({&v, &n});
      }
    // Unmatched ends per (src, dst), to name the near miss (tag or size).
    std::map<std::pair<int64_t, int64_t>, std::vector<End>> loose_sends, loose_recvs;
    std::vector<std::pair<Key, End>> unmatched_s, unmatched_r;
    for (const auto& [key, sr] : keys) {
      for (size_t i = sr.second.size(); i < sr.first.size(); ++i) { unmatched_s.push_back({key, sr.first[i]}); loose_sends[{std::get<0>(key), std::get<1>(key)}].push_back(sr.first[i]); }
      for (size_t i = sr.first.size(); i < sr.second.size(); ++i) { unmatched_r.push_back({key, sr.second[i]}); loose_recvs[{std::get<0>(key), std::get<1>(key)}].push_back(sr.second[i]); }
    }
    auto hint = [](const std::vector<End>* loose, const char* what) -> std::string {
      if (!loose || loose->empty()) return "";
      const End& e = loose->front();
      return "; nearest: unmatched " + std::string(what) + " node " + std::to_string(e.n->id) + " (" + e.n->name + ") with tag " +
             std::to_string(e.n->tag) + " size " + std::to_string(e.n->comm_size);
    };
    for (const auto& [key, e] : unmatched_s) {
      auto it = loose_recvs.find({std::get<0>(key), std::get<1>(key)});
      add(e.v->rank, e.n, "R8", "send to rank " + std::to_string(std::get<1>(key)) + " tag " + std::to_string(std::get<2>(key)) +
          " size " + std::to_string(std::get<3>(key)) + " has no matching recv on rank " + std::to_string(std::get<1>(key)) +
          hint(it == loose_recvs.end() ? nullptr : &it->second, "recv"));
    }
    for (const auto& [key, e] : unmatched_r) {
      auto it = loose_sends.find({std::get<0>(key), std::get<1>(key)});
      add(e.v->rank, e.n, "R8", "recv from rank " + std::to_string(std::get<0>(key)) + " tag " + std::to_string(std::get<2>(key)) +
          " size " + std::to_string(std::get<3>(key)) + " has no matching send on rank " + std::to_string(std::get<0>(key)) +
          hint(it == loose_sends.end() ? nullptr : &it->second, "send"));
    }
  }

  // R7b: consecutive collectives (by id) on a group must be ordered by a
  // dependency path, or the simulator may issue them in either order. One
  // pass per group in topological order: best[x] = highest position of a
  // collective of that group that is x or an ancestor of x.
  void check_chaining(const RankView& v) {
    const auto& nodes = v.t->trace.nodes;
    if (v.topo.size() != nodes.size()) return;  // cyclic: R3 said so
    std::vector<int32_t> best(nodes.size());
    for (const auto& [g, idx] : v.colls) {
      if (idx.size() < 2) continue;
      std::vector<int32_t> posof(nodes.size(), -1);
      for (size_t k = 0; k < idx.size(); ++k) posof[idx[k]] = static_cast<int32_t>(k);
      int64_t bad = 0;
      std::string first;
      const TraceNode* first_b = nullptr;
      for (uint32_t x : v.topo) {
        int32_t up = -1;  // best over strict ancestors
        for (uint32_t e = v.off[x]; e < v.off[x + 1]; ++e) up = std::max(up, best[v.dep[e]]);
        best[x] = std::max(up, posof[x]);
        if (posof[x] <= 0 || up == posof[x] - 1 || bad++) continue;
        const TraceNode& prev = nodes[idx[posof[x] - 1]];
        first = up < posof[x] - 1
                    ? "collective on group " + std::to_string(g) + " has no dependency path from node " +
                          std::to_string(prev.id) + " (" + prev.name + "), the previous collective on the group by id;"
                    : "collective on group " + std::to_string(g) + " depends on a collective of higher id on the group;";
        first_b = &nodes[x];
      }
      if (!bad) continue;
      add(v.rank, first_b, "R7b", first +
          " the simulator may issue them in either order (" + std::to_string(bad) + " such pairs on this group)", Severity::kWarning);
    }
  }

  const GroupTable& groups_;
  const ValidateOptions& opt_;
  ValidationReport rep_;
  int64_t world_ = 0;
  std::vector<RankView> views_;  // ascending rank, valid ranks only
  std::set<int64_t> present_;
};

}  // namespace

ValidationReport validate_traces(const std::vector<DecodedTrace>& ranks, const GroupTable& groups,
                                 const ValidateOptions& options) {
  return Validator(groups, options).run(ranks);
}

}  // namespace sc::testing::reference
