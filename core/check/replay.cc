#include "check/replay.h"

#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>

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
  Replayer(const std::vector<RankTrace>& r, const GroupTable& g, double bw, bool instant = false)
      : groups_(g), bw_(bw), instant_(instant) {
    for (const RankTrace& t : r) nodes_.push_back(&t.nodes);
  }
  // Programs read in place (no per-rank copy); peers[r][i] replaces node
  // i's peer.
  Replayer(std::vector<const std::vector<TraceNode>*> nodes, std::vector<const std::vector<int64_t>*> peers,
           const GroupTable& g, double bw, bool instant)
      : nodes_(std::move(nodes)), peers_(std::move(peers)), groups_(g), bw_(bw), instant_(instant) {}

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
      } else if (n.kind == TraceNodeKind::kCollective && instant_) {
        s.comm_busy = true;
        events_.push({now, r, id});
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
    double t = instant_ ? start : start + static_cast<double>(n.comm_size) / bw_;
    events_.push({t, q[si].rank, q[si].node});
    events_.push({t, q[vi].rank, q[vi].node});
    q.erase(q.begin() + static_cast<long>(std::max(si, vi)));
    q.erase(q.begin() + static_cast<long>(std::min(si, vi)));
  }

  void finish(const Event& e) {
    auto& s = st_[e.rank];
    const TraceNode& n = (*nodes_[e.rank])[e.node];
    if (on_finish_) on_finish_(e.rank, n, e.time);
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

  int64_t peer(int64_t r, uint32_t id) const {
    if (static_cast<size_t>(r) < peers_.size() && peers_[r]) return (*peers_[r])[id];
    return (*nodes_[r])[id].peer;
  }

  std::vector<const std::vector<TraceNode>*> nodes_;
  std::vector<const std::vector<int64_t>*> peers_;
  const GroupTable& groups_;
  double bw_;
  bool instant_;

 public:
  std::function<void(int64_t, const TraceNode&, double)> on_finish_;

 private:
  std::vector<RankState> st_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::map<std::pair<int64_t, int64_t>, CollInstance> coll_;
  std::map<std::tuple<int64_t, int64_t, int32_t, int64_t>, std::vector<P2P>> p2p_;
  ReplayResult res_;
};

}  // namespace

namespace {

PipelineTiming replay_pipeline_with(Replayer& r, size_t n) {
  PipelineTiming t;
  t.busy_micros.assign(n, 0);
  t.end_micros.assign(n, 0);
  r.on_finish_ = [&](int64_t rank, const TraceNode& n, double time) {
    if (n.kind != TraceNodeKind::kCompute || n.name.rfind("opt.", 0) == 0) return;
    t.busy_micros[rank] += static_cast<double>(n.duration_micros);
    t.end_micros[rank] = std::max(t.end_micros[rank], time);
  };
  t.completed = r.run().completed;
  return t;
}

}  // namespace

PipelineTiming replay_pipeline(const std::vector<RankTrace>& stages) {
  GroupTable none;
  Replayer r(stages, none, 1.0, true);
  return replay_pipeline_with(r, stages.size());
}

PipelineTiming replay_pipeline(const std::vector<const std::vector<TraceNode>*>& stages,
                               const std::vector<std::vector<int64_t>>& peers) {
  GroupTable none;
  std::vector<const std::vector<int64_t>*> p;
  for (const auto& v : peers) p.push_back(&v);
  Replayer r(stages, std::move(p), none, 1.0, true);
  return replay_pipeline_with(r, stages.size());
}

ReplayResult replay_traces(const std::vector<RankTrace>& ranks, const GroupTable& groups, double bytes_per_micro) {
  return Replayer(ranks, groups, bytes_per_micro).run();
}

}  // namespace sc
