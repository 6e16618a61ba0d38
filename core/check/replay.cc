#include "check/replay.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

namespace sc {
namespace {

struct RankState {
  std::vector<int> waiting;        // unfinished deps per node
  std::vector<uint32_t> child_at, child;  // children of i: child[child_at[i] .. child_at[i + 1])
  std::set<uint32_t> ready;        // ascending id = issue order
  bool compute_busy = false, comm_busy = false;
  std::map<int64_t, int64_t> issued_on_group;  // group -> count
  std::vector<char> in_flight;      // per node: issued, not finished
  int64_t finished = 0;
};

struct Event {
  double time;
  int64_t rank;
  uint32_t node;
  bool operator>(const Event& o) const { return std::tie(time, rank, node) > std::tie(o.time, o.rank, o.node); }
};

class Replayer {
 public:
  Replayer(const std::vector<RankTrace>& r, const GroupTable& g, double bw) : groups_(g), bw_(bw) {
    for (const RankTrace& t : r) nodes_.push_back(&t.nodes);
    for (const auto& [id, members] : g) {  // sorted once: a member is found in log time
      std::vector<int64_t>& m = sorted_[id];
      m = members;
      std::sort(m.begin(), m.end());
    }
  }

  ReplayResult run() {
    st_.resize(nodes_.size());
    for (size_t r = 0; r < nodes_.size(); ++r) {
      const auto& nodes = *nodes_[r];
      auto& s = st_[r];
      s.waiting.assign(nodes.size(), 0);
      s.in_flight.assign(nodes.size(), 0);
      s.child_at.assign(nodes.size() + 1, 0);
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].id != i) return fail("rank " + std::to_string(r) + ": node ids are not 0..n-1 in order");
        for (auto d : nodes[i].deps) {
          if (d >= nodes.size()) return fail("rank " + std::to_string(r) + " node " + std::to_string(i) + ": missing dependency " + std::to_string(d));
          s.waiting[i]++;
          s.child_at[d + 1]++;
        }
        if (s.waiting[i] == 0) s.ready.insert(static_cast<uint32_t>(i));
      }
      for (size_t i = 0; i < nodes.size(); ++i) s.child_at[i + 1] += s.child_at[i];
      s.child.resize(s.child_at[nodes.size()]);
      std::vector<uint32_t> at(s.child_at.begin(), s.child_at.end() - 1);
      for (size_t i = 0; i < nodes.size(); ++i)
        for (auto d : nodes[i].deps) s.child[at[d]++] = static_cast<uint32_t>(i);
    }
    for (size_t r = 0; r < nodes_.size(); ++r) issue(static_cast<int64_t>(r), 0);
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      finish(e);
    }
    res_.completed = res_.problems.empty();
    for (size_t r = 0; r < nodes_.size(); ++r) {
      if (st_[r].finished == static_cast<int64_t>(nodes_[r]->size())) continue;
      res_.completed = false;
      if (res_.problems.size() < 20) res_.problems.push_back(stuck(static_cast<int64_t>(r)));
    }
    return res_;
  }

 private:
  ReplayResult fail(std::string why) {
    res_.problems.push_back(std::move(why));
    return res_;
  }

  std::string stuck(int64_t r) const {
    const auto& s = st_[r];
    std::string out = "rank " + std::to_string(r) + " hangs";
    for (size_t i = 0; i < s.waiting.size(); ++i)
      if (s.waiting[i] >= 0) {
         const auto& n = (*nodes_[r])[i];
        out += " at node " + std::to_string(n.id) + " '" + n.name + "'";
        break;
      }
    for (uint32_t id = 0; id < s.in_flight.size(); ++id) {
      if (!s.in_flight[id]) continue;
      const auto& n = (*nodes_[r])[id];
      out += "; in flight: " + std::to_string(id) + " '" + n.name + "'";
      if (n.kind == TraceNodeKind::kCollective) out += " on group " + std::to_string(n.group);
      if (n.kind == TraceNodeKind::kSend || n.kind == TraceNodeKind::kRecv)
 out += " peer " + std::to_string(peer(r, id)) + " tag " + std::to_string(n.tag);
    }
    return out;
  }

  void issue(int64_t r, double now) {
    auto& s = st_[r];
    const auto& nodes = *nodes_[r];
    for (auto it = s.ready.begin(); it != s.ready.end();) {
      const TraceNode& n = nodes[*it];
      bool comp = n.kind == TraceNodeKind::kCompute;
      bool recv = n.kind == TraceNodeKind::kRecv;
      if ((comp && s.compute_busy) || (!comp && !recv && s.comm_busy)) { ++it; continue; }
      uint32_t id = *it;
      it = s.ready.erase(it);
      s.in_flight[id] = 1;
      if (comp) {
        s.compute_busy = true;
        events_.push({now + static_cast<double>(n.duration_micros), r, id});
      } else if (n.kind == TraceNodeKind::kCollective) {
        s.comm_busy = true;
        join_collective(r, id, now);
      } else {
        if (!recv) s.comm_busy = true;
        join_p2p(r, id, now);
      }
    }
  }

  void join_collective(int64_t r, uint32_t id, double now) {
    const TraceNode& n = (*nodes_[r])[id];
    auto g = groups_.find(n.group);
    if (g == groups_.end()) {
      res_.problems.push_back("rank " + std::to_string(r) + " node " + std::to_string(id) + ": group " + std::to_string(n.group) + " not in the group file");
      return;
    }
    // The simulator matches a collective among the group's listed members:
    // a rank outside them never completes one (and a member that never
    // issues leaves the others waiting, reported as their hang).
    const std::vector<int64_t>& sorted = sorted_.at(n.group);
    if (!std::binary_search(sorted.begin(), sorted.end(), r)) {
      res_.problems.push_back("rank " + std::to_string(r) + " node " + std::to_string(id) + ": issues a collective on group " +
                              std::to_string(n.group) + (g->second.empty() ? ", which has no members"
                                                                            : ", of which it is not a member"));
      return;
    }
    int64_t k = st_[r].issued_on_group[n.group]++;
    auto& inst = coll_[{n.group, k}];
    if (inst.members.empty()) { inst.type = n.coll; inst.size = n.comm_size; }
    else if (inst.type != n.coll || inst.size != n.comm_size)
      res_.problems.push_back("group " + std::to_string(n.group) + " collective #" + std::to_string(k) + ": rank " +
                              std::to_string(r) + " issues " + collective_name(n.coll) + " of " + std::to_string(n.comm_size) +
                              " bytes, another member " + collective_name(inst.type) + " of " + std::to_string(inst.size));
    inst.members.push_back({r, id});
    inst.start = std::max(inst.start, now);
    if (inst.members.size() == g->second.size()) {
      double t = inst.start + static_cast<double>(n.comm_size) / bw_;
      for (auto [mr, mid] : inst.members) events_.push({t, mr, mid});
      coll_.erase({n.group, k});
    }
  }

  void join_p2p(int64_t r, uint32_t id, double now) {
    const TraceNode& n = (*nodes_[r])[id];
    bool send = n.kind == TraceNodeKind::kSend;
    const int64_t pr = peer(r, id);
    auto key = send ? std::make_tuple(r, pr, n.tag, n.comm_size) : std::make_tuple(pr, r, n.tag, n.comm_size);
    auto& q = p2p_[key];
    q.push_back({r, id, now, send});
    // Match the oldest send with the oldest recv of the same key.
    std::pair<int64_t, uint32_t> s{-1, 0}, v{-1, 0};
    double start = 0;
    size_t si = q.size(), vi = q.size();
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i].send && si == q.size()) si = i;
      if (!q[i].send && vi == q.size()) vi = i;
    }
    if (si == q.size() || vi == q.size()) return;
    start = std::max(q[si].time, q[vi].time);
    double t = start + static_cast<double>(n.comm_size) / bw_;
    events_.push({t, q[si].rank, q[si].node});
    events_.push({t, q[vi].rank, q[vi].node});
    q.erase(q.begin() + static_cast<long>(std::max(si, vi)));
    q.erase(q.begin() + static_cast<long>(std::min(si, vi)));
  }

  void finish(const Event& e) {
    auto& s = st_[e.rank];
    const TraceNode& n = (*nodes_[e.rank])[e.node];
    if (n.kind == TraceNodeKind::kCompute) s.compute_busy = false;
    else if (n.kind != TraceNodeKind::kRecv) s.comm_busy = false;
    s.waiting[e.node] = -1;
    s.in_flight[e.node] = 0;
    s.finished++;
    res_.nodes_finished++;
    res_.makespan_micros = std::max(res_.makespan_micros, e.time);
    for (uint32_t ci = s.child_at[e.node]; ci < s.child_at[e.node + 1]; ++ci)
      if (--s.waiting[s.child[ci]] == 0) s.ready.insert(s.child[ci]);
    issue(e.rank, e.time);
  }

  struct CollInstance {
    CollectiveType type = CollectiveType::kAllReduce;
    int64_t size = 0;
    double start = 0;
    std::vector<std::pair<int64_t, uint32_t>> members;
  };
  struct P2P {
    int64_t rank;
    uint32_t node;
    double time;
    bool send;
  };

  int64_t peer(int64_t r, uint32_t id) const { return (*nodes_[r])[id].peer; }

  std::vector<const std::vector<TraceNode>*> nodes_;
  const GroupTable& groups_;
  std::map<int64_t, std::vector<int64_t>> sorted_;  // each group's members, sorted
  double bw_;

  std::vector<RankState> st_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::map<std::pair<int64_t, int64_t>, CollInstance> coll_;
  std::map<std::tuple<int64_t, int64_t, int32_t, int64_t>, std::vector<P2P>> p2p_;
  ReplayResult res_;
};

}  // namespace

namespace {

// A transfer's match key: (source, destination, tag, bytes).
struct P2PKey {
  int64_t src, dst;
  int32_t tag;
  int64_t size;
  bool operator==(const P2PKey&) const = default;
};
struct P2PKeyHash {
  size_t operator()(const P2PKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.src) * 0x9E3779B97F4A7C15ull;
    h = (h ^ static_cast<uint64_t>(k.dst)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ static_cast<uint32_t>(k.tag)) * 0x94D049BB133111EBull;
    h = (h ^ static_cast<uint64_t>(k.size)) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

// replay_pipeline: the Replayer's rules with collectives and transfers
// taking no time, one rank per stage. Written apart from the Replayer
// because the summary runs it on every job (millions of nodes for long
// pipelines): ready nodes in two heaps (the compute stream and the
// communication stream) instead of one ordered set, the per-node facts it
// needs in a 16-byte record, no callback. The Replayer's events in the Replayer's
// order, with communication instant.
template <class N>
class PipelineReplay {
 public:
  PipelineReplay(const std::vector<const std::vector<N>*>& nodes,
                 const std::vector<const std::vector<int64_t>*>& peers)
      : nodes_(nodes), peers_(peers), st_(nodes.size()) {}

  PipelineTiming run() {
    PipelineTiming t;
    t.busy_micros.assign(nodes_.size(), 0);
    t.end_micros.assign(nodes_.size(), 0);
    if (!setup()) return t;
    for (size_t r = 0; r < nodes_.size(); ++r) issue(static_cast<int64_t>(r), 0);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      finish(e, t);
    }
    t.completed = true;
    for (size_t r = 0; r < nodes_.size(); ++r)
      if (st_[r].finished != static_cast<int64_t>(nodes_[r]->size())) t.completed = false;
    return t;
  }

 private:
  // What the replay needs of a node.
  enum Class : uint8_t { kCounted = 0, kOptimizer = 1, kColl = 2, kSendNode = 3, kRecvNode = 4 };

  // The per-node facts of every stage in one array (and the children in
  // one more): separate arrays per stage start at the same page offset and
  // evict each other from the cache as the stages advance side by side.
  struct Node {
    double dur = 0;         // compute nodes' duration_micros
    uint32_t child_at = 0;  // children: child[child_at .. next node's child_at), stage-local ids
    uint8_t cls = 0;
  };
  struct Stage {
    Node* n = nullptr;  // size + 1 entries (the last bounds the children)
    // Unfinished dependencies per node, -1 once finished; apart from n
    // (children include backward consumers far ahead: dense counts stay
    // in the cache).
    int32_t* waiting = nullptr;
    const uint32_t* child = nullptr;
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> comp, comm;
    std::vector<uint32_t> recvs;  // ready receives, issued at the next issue
    bool comp_busy = false, comm_busy = false;
    int64_t finished = 0;
  };

  bool setup() {
    size_t total = 0, edges = 0;
    for (const auto* v : nodes_) {
      total += v->size() + 1;
      for (const N& x : *v) edges += x.deps.size();
    }
    node_.assign(total, Node{});
    waiting_.assign(total, 0);
    child_.resize(edges);
    size_t base = 0, ebase = 0;
    for (size_t r = 0; r < nodes_.size(); ++r) {
      const auto& nodes = *nodes_[r];
      Stage& s = st_[r];
      const size_t n = nodes.size();
      s.n = node_.data() + base;
      s.waiting = waiting_.data() + base;
      s.child = child_.data() + ebase;
      Node* v = s.n;
      for (size_t i = 0; i < n; ++i) {
        const N& x = nodes[i];
        if (x.id != i) return false;
        for (auto d : x.deps) {
          if (d >= n) return false;
          s.waiting[i]++;
          v[d + 1].child_at++;
        }
        v[i].cls = x.kind == TraceNodeKind::kCompute ? (x.name.rfind("opt.", 0) == 0 ? kOptimizer : kCounted)
                   : x.kind == TraceNodeKind::kCollective ? kColl
                   : x.kind == TraceNodeKind::kSend       ? kSendNode
                                                          : kRecvNode;
        if (x.kind == TraceNodeKind::kCompute) v[i].dur = static_cast<double>(x.duration_micros);
      }
      for (size_t i = 0; i < n; ++i) v[i + 1].child_at += v[i].child_at;
      std::vector<uint32_t> at(n);
      for (size_t i = 0; i < n; ++i) at[i] = v[i].child_at;
      uint32_t* child = child_.data() + ebase;
      for (size_t i = 0; i < n; ++i)
        for (auto d : nodes[i].deps) child[at[d]++] = static_cast<uint32_t>(i);
      for (size_t i = 0; i < n; ++i)
        if (s.waiting[i] == 0) ready(s, static_cast<uint32_t>(i));
      base += n + 1;
      ebase += v[n].child_at;
    }
    return true;
  }

  static void ready(Stage& s, uint32_t i) {
    const uint8_t c = s.n[i].cls;
    if (c <= kOptimizer) s.comp.push(i);
    else if (c == kRecvNode) s.recvs.push_back(i);
    else s.comm.push(i);
  }

  // The Replayer's pass over the ready set in ascending id: the lowest
  // compute node if the compute stream is free, the lowest collective or
  // send if the communication stream is free, every receive; transfers
  // are matched in that id order.
  void issue(int64_t r, double now) {
    Stage& s = st_[r];
    if (!s.comp_busy && !s.comp.empty()) {
      const uint32_t i = s.comp.top();
      s.comp.pop();
      s.comp_busy = true;
      events_.push({now + s.n[i].dur, r, i});
    }
    int64_t send = -1;
    if (!s.comm_busy && !s.comm.empty()) {
      const uint32_t i = s.comm.top();
      s.comm.pop();
      s.comm_busy = true;
      if (s.n[i].cls == kColl) events_.push({now, r, i});
      else send = i;
    }
    if (s.recvs.empty()) {
      if (send >= 0) join_p2p(r, static_cast<uint32_t>(send), now);
      return;
    }
    std::sort(s.recvs.begin(), s.recvs.end());
    for (uint32_t i : s.recvs) {
      if (send >= 0 && static_cast<uint32_t>(send) < i) join_p2p(r, static_cast<uint32_t>(send), now), send = -1;
      join_p2p(r, i, now);
    }
    if (send >= 0) join_p2p(r, static_cast<uint32_t>(send), now);
    s.recvs.clear();
  }

  struct Post {
    int64_t rank;
    uint32_t node;
    double time;
  };
  // Unmatched posts of one key, oldest first; one side only (a post matches
  // the oldest of the other side at once).
  struct Queue {
    bool sends = false;
    size_t head = 0;
    std::vector<Post> q;
  };

  void join_p2p(int64_t r, uint32_t id, double now) {
    const N& n = (*nodes_[r])[id];
    const bool send = n.kind == TraceNodeKind::kSend;
    const int64_t pr = (*peers_[r])[id];
    const P2PKey key = send ? P2PKey{r, pr, n.tag, n.comm_size} : P2PKey{pr, r, n.tag, n.comm_size};
    auto [it, fresh] = p2p_.try_emplace(key);
    Queue& q = it->second;
    if (fresh || q.sends == send) {
      q.sends = send;
      q.q.push_back({r, id, now});
      return;
    }
    const Post other = q.q[q.head++];
    if (q.head == q.q.size()) p2p_.erase(it);
    const double t = std::max(now, other.time);
    events_.push({t, send ? r : other.rank, send ? id : other.node});
    events_.push({t, send ? other.rank : r, send ? other.node : id});
  }

  void finish(const Event& e, PipelineTiming& t) {
    Stage& s = st_[e.rank];
    Node* v = s.n;
    const uint8_t c = v[e.node].cls;
    if (c <= kOptimizer) {
      s.comp_busy = false;
      if (c == kCounted) {
        t.busy_micros[e.rank] += v[e.node].dur;
        t.end_micros[e.rank] = std::max(t.end_micros[e.rank], e.time);
      }
    } else if (c != kRecvNode) {
      s.comm_busy = false;
    }
    s.waiting[e.node] = -1;
    s.finished++;
    for (uint32_t ci = v[e.node].child_at; ci < v[e.node + 1].child_at; ++ci)
      if (--s.waiting[s.child[ci]] == 0) ready(s, s.child[ci]);
    issue(e.rank, e.time);
  }

  const std::vector<const std::vector<N>*>& nodes_;
  const std::vector<const std::vector<int64_t>*>& peers_;
  std::vector<Stage> st_;
  std::vector<Node> node_;
  std::vector<int32_t> waiting_;
  std::vector<uint32_t> child_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::unordered_map<P2PKey, Queue, P2PKeyHash> p2p_;
};

// The same figures without events, where the programs allow it (every
// lowered program does): when compute nodes form one chain (each depends on
// the compute node before it), every receive is posted at the start (no
// dependencies), each transfer key occurs once per side and every send has
// its receive, no node ever waits for a stream — collectives and transfers
// take no time and a send completes at issue — so a node ends at the
// latest end of its dependencies (a receive: at its send's end), plus its
// duration for compute: a longest path, computed stage by stage in id order,
// a stage pausing at a receive whose send is not computed yet. Returns false
// (and the caller runs the events) when a condition fails or the stages
// block each other.
// One pass per stage in id order; a send's end is recorded under its key
// as its stage computes it, and a stage pauses at a receive whose send is
// not recorded yet. peer_of(stage, node): the stage of a send/recv's peer.
template <class N, class PeerOf>
bool replay_by_longest_path(const std::vector<const std::vector<N>*>& nodes, const PeerOf& peer_of,
                            PipelineTiming& t) {
  const size_t S = nodes.size();
  t.busy_micros.assign(S, 0);
  t.end_micros.assign(S, 0);
  struct Send {
    double end = 0;
    bool matched = false;
  };
  std::unordered_map<P2PKey, Send, P2PKeyHash> sends;
  std::vector<std::vector<double>> fin(S);
  std::vector<size_t> cur(S, 0);
  std::vector<int64_t> last_compute(S, -1);
  for (size_t r = 0; r < S; ++r) fin[r].assign(nodes[r]->size(), 0);
  size_t matched = 0, left = 0;  // stages not done
  for (size_t r = 0; r < S; ++r) left += nodes[r]->empty() ? 0 : 1;
  for (bool progress = true; progress && left > 0;) {
    progress = false;
    for (size_t r = 0; r < S; ++r) {
      const auto& v = *nodes[r];
      size_t& i = cur[r];
      if (i == v.size()) continue;
      const size_t from = i;
      for (; i < v.size(); ++i) {
        const N& x = v[i];
        if (x.id != i) return false;
        double ready = 0;
        for (uint64_t d : x.deps) {
          if (d >= i) return false;
          ready = std::max(ready, fin[r][d]);
        }
        if (x.kind == TraceNodeKind::kRecv) {
          if (!x.deps.empty()) return false;
          auto it = sends.find(P2PKey{peer_of(r, i), static_cast<int64_t>(r), x.tag, x.comm_size});
          if (it == sends.end()) break;  // its send is not computed yet (if it never is, the stages stall)
          if (it->second.matched) return false;
          it->second.matched = true;
          ++matched;
          fin[r][i] = it->second.end;
        } else if (x.kind == TraceNodeKind::kCompute) {
          const int64_t prev = last_compute[r];
          if (prev >= 0 && std::find(x.deps.begin(), x.deps.end(), static_cast<uint64_t>(prev)) == x.deps.end())
            return false;
          last_compute[r] = static_cast<int64_t>(i);
          const double dur = static_cast<double>(x.duration_micros);
          fin[r][i] = ready + dur;
          if (x.name.rfind("opt.", 0) != 0) {
            t.busy_micros[r] += dur;
            t.end_micros[r] = std::max(t.end_micros[r], fin[r][i]);
          }
        } else {
          fin[r][i] = ready;
          if (x.kind == TraceNodeKind::kSend &&
              !sends.emplace(P2PKey{static_cast<int64_t>(r), peer_of(r, i), x.tag, x.comm_size}, Send{ready}).second)
            return false;  // a key twice
        }
      }
      if (i != from) progress = true;
      if (i == v.size()) --left;
    }
  }
  if (left > 0 || matched != sends.size()) return false;
  t.completed = true;
  return true;
}

}  // namespace

PipelineTiming replay_pipeline(const std::vector<RankTrace>& stages) {
  std::vector<const std::vector<TraceNode>*> nodes;
  std::vector<std::vector<int64_t>> peers;
  for (const RankTrace& t : stages) {
    nodes.push_back(&t.nodes);
    auto& v = peers.emplace_back(t.nodes.size(), -1);
    for (size_t i = 0; i < t.nodes.size(); ++i) v[i] = t.nodes[i].peer;
  }
  return replay_pipeline(nodes, peers);
}

template <class N>
PipelineTiming replay_with_peers(const std::vector<const std::vector<N>*>& stages,
                                 const std::vector<std::vector<int64_t>>& peers) {
  PipelineTiming t;
  bool sized = peers.size() >= stages.size();
  for (size_t r = 0; sized && r < stages.size(); ++r) sized = peers[r].size() >= stages[r]->size();
  const auto peer_of = [&](size_t r, size_t i) { return peers[r][i]; };
  if (sized && replay_by_longest_path(stages, peer_of, t)) return t;
  std::vector<const std::vector<int64_t>*> p;
  for (const auto& v : peers) p.push_back(&v);
  return PipelineReplay<N>(stages, p).run();
}

PipelineTiming replay_pipeline(const std::vector<const std::vector<TraceNode>*>& stages,
                               const std::vector<std::vector<int64_t>>& peers) {
  return replay_with_peers(stages, peers);
}

PipelineTiming replay_pipeline(const std::vector<const std::vector<ProgramNode>*>& stages,
                               const std::vector<std::vector<int64_t>>& peers) {
  return replay_with_peers(stages, peers);
}

PipelineTiming replay_pipeline(const std::vector<const RoleProgram*>& stages) {
  std::vector<const std::vector<ProgramNode>*> nodes;
  for (const RoleProgram* p : stages) nodes.push_back(&p->nodes);
  // A ring-attention neighbour is on the same stage.
  const auto peer_of = [&](size_t r, size_t i) -> int64_t {
    const RoleProgram& p = *stages[r];
    if (i < p.ring_offset.size() && p.ring_offset[i] != 0) return static_cast<int64_t>(r);
    return i < p.peer_stage.size() ? p.peer_stage[i] : -1;
  };
  PipelineTiming t;
  if (replay_by_longest_path(nodes, peer_of, t)) return t;
  std::vector<std::vector<int64_t>> peers(stages.size());
  for (size_t r = 0; r < stages.size(); ++r) {
    peers[r].assign(nodes[r]->size(), -1);
    for (size_t i = 0; i < nodes[r]->size(); ++i) {
      const TraceNodeKind k = (*nodes[r])[i].kind;
      if (k == TraceNodeKind::kSend || k == TraceNodeKind::kRecv) peers[r][i] = peer_of(r, i);
    }
  }
  std::vector<const std::vector<int64_t>*> p;
  for (const auto& v : peers) p.push_back(&v);
  return PipelineReplay<ProgramNode>(nodes, p).run();
}

PipelineTiming replay_pipeline_events(const std::vector<const std::vector<TraceNode>*>& stages,
                                      const std::vector<std::vector<int64_t>>& peers) {
  std::vector<const std::vector<int64_t>*> p;
  for (const auto& v : peers) p.push_back(&v);
  return PipelineReplay<TraceNode>(stages, p).run();
}

PipelineTiming replay_pipeline_events(const std::vector<const std::vector<ProgramNode>*>& stages,
                                      const std::vector<std::vector<int64_t>>& peers) {
  std::vector<const std::vector<int64_t>*> p;
  for (const auto& v : peers) p.push_back(&v);
  return PipelineReplay<ProgramNode>(stages, p).run();
}

ReplayResult replay_traces(const std::vector<RankTrace>& ranks, const GroupTable& groups, double bytes_per_micro) {
  return Replayer(ranks, groups, bytes_per_micro).run();
}

}  // namespace sc
