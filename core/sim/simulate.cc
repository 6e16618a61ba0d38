#include "sim/simulate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "base/cancel.h"

namespace sc {

int comm_kind_of_axis(const std::string& a) {
  if (a == "tp" || a == "etp") return 0;
  if (a == "cp") return 1;
  if (a == "ep" || a == "ep_nvl" || a == "ep_rdma") return 2;  // ep_*: DeepEP's legs
  if (a == "pp") return 3;
  return 4;  // dp, dp+cp, edp, dp_shard, dp_replicate, embd: gradient/parameter reductions
}

namespace {

// A send/recv peer: the same pipeline position on another stage, or the
// neighbour at `offset` along a ring axis.
struct PeerSpec {
  int64_t stage = -1;
  int axis = -1;
  int64_t offset = 0;
  auto operator<=>(const PeerSpec&) const = default;
};

struct StagePlan {
  std::vector<int> axes;  // global axis index per collective slot
  std::vector<PeerSpec> peers;
  std::vector<int> ndeps;
  // The fields of the nodes the run reads, compact (a TraceNode is large:
  // names, deps; reading it per event misses the cache).
  struct Info {
    int64_t val = 0;   // compute: duration_micros; communication: comm_size
    int32_t slot = -1;  // collective slot, peer slot, or -1
    int32_t tag = 0;    // send/recv tag
    uint32_t child_at = 0;  // children of node i: child[info[i].child_at .. info[i + 1].child_at), ascending
    int8_t kind = -1;   // comm kind, -1 for compute
    int8_t stream = 0;  // stream (kCompute...), -1 for receives (posted at once)
    uint8_t nk = 0;     // TraceNodeKind
    uint8_t coll = 0;   // CollectiveType
    uint8_t host_sync = 0;  // the host waits for this node's dependencies before issuing it
    TraceNodeKind node_kind() const { return static_cast<TraceNodeKind>(nk); }
  };
  // Every stage's infos (n + 1 each: the last bounds the children) and
  // children live in one array each (Engine): arrays of their own would
  // start at the same page offset and evict each other from the cache as
  // the stages advance side by side.
  size_t n = 0;
  Info* info = nullptr;
  uint32_t* child = nullptr;
  bool has_shared = false;  // a node runs on kShared
};

// What the run keeps per node of an actor (one array for all actors, as
// the plans'). start also holds the time a node became ready until it
// starts (stream_pred reads it at issue).
// Unfinished dependencies are counted in an array apart (Actor::waiting):
// a node's children include its backward consumers far ahead, so the
// counts are touched at random, and dense they stay in the cache.
struct NodeState {
  double start = 0, end = 0;
  int32_t pred_actor = -1;  // the node the critical path came from
  uint32_t pred_node = 0;
};

// Streams of a rank. ASTRA-sim's rule uses kCompute and kComm; Megatron's
// puts tp/cp/ep collectives on kCompute, sends on kComm, dp reductions on
// kReduce, and the tp collectives Transformer Engine overlaps with the
// GEMMs (RoleProgram::side_stream 1) on kSide, and the shared experts
// Megatron-Core overlaps with the token dispatcher (side_stream 2) on
// kShared, a second compute stream. The pipeline sends Megatron-LM posts
// asynchronously (overlap_p2p_comm: the interleaved schedule's steady
// phase, side_stream 3) run on kPipe, NCCL's stream of the pipeline group,
// so the compute stream goes on to the next chunk while they transfer.
// The expert-parallel all-to-alls of Megatron-Core's combined 1F1B steps
// (overlap_moe_expert_parallel_comm, side_stream 4) run on kEp, the
// communication stream it creates for them (pipeline_parallel/utils.py,
// set_streams), beside the other micro-batch's compute.
inline constexpr int kCompute = 0, kComm = 1, kReduce = 2, kSide = 3, kShared = 4, kPipe = 5, kEp = 6, kStreams = 7;

struct Actor {
  int stage = 0;
  int64_t rank = 0;
  std::vector<std::vector<int>> req;  // per collective slot: actors whose issue it waits for
  std::vector<GroupShape> shape;      // per collective slot
  std::vector<int> slot_of_axis;      // global axis -> collective slot (-1)
  std::vector<int> peer_actor;        // per peer slot
  std::vector<int64_t> peer_rank;
  std::vector<char> solo;             // per collective slot: the group is this class alone
  // state
  NodeState* s = nullptr;  // per node (Engine::states_)
  int32_t* waiting = nullptr;  // per node: unfinished dependencies, -1 once finished (Engine::waiting_)
  // Ready nodes per stream, lowest id first (a heap: cheaper than a set).
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> ready[kStreams];
  bool busy[kStreams] = {false, false, false, false, false, false, false};
  std::vector<int64_t> issued;  // per collective slot
  int64_t finished = 0;
  int64_t last[kStreams] = {-1, -1, -1, -1, -1, -1, -1};
  // Compute slowed by communication kernels sharing the SMs (kMegatron):
  // per compute stream ([0] kCompute, [1] kShared) the node in flight, its
  // work left (µs at full speed) as of seg_start, its rate, and a version
  // that outdates its earlier end events; and how many overlapping
  // transfers of each tier run beside kCompute (sharing: on other streams)
  // and on kCompute itself (sharing_cs: beside kShared only). Two compute
  // nodes in flight share the GPU: each runs at half its rate.
  int64_t running[2] = {-1, -1};
  double work_left[2] = {0, 0}, seg_start[2] = {0, 0}, rate[2] = {1, 1};
  uint32_t version[2] = {0, 0};
  int sharing[3] = {0, 0, 0};     // [0] inside a domain, [1] across domains, [2] DeepEP's kernels
  int sharing_cs[3] = {0, 0, 0};  // the same, transfers on kCompute
  // DeepEP's dispatch and combine legs in flight (NetworkModel::
  // dispatcher_overlap_rate < 1): each progresses at that rate while a
  // compute node runs on the rank and at full speed otherwise; its work
  // left (µs at full speed) as of seg_start, and a version that outdates
  // its earlier end events. At most a few at a time.
  struct Flow {
    uint32_t node;
    double work_left, seg_start, rate;
    uint32_t version;
  };
  std::vector<Flow> flows;
  // The host (SimOptions::host_sync_micros > 0): nodes [0, host_next) have
  // their issue times (Engine::host_at_), host_t is the last one's.
  double* host_at = nullptr;  // per node
  uint8_t* held = nullptr;    // per node: ready, but the host has not issued it yet
  uint32_t host_next = 0;
  double host_t = 0;
};

// Event::version of a node's issue by the host (not an end).
inline constexpr uint32_t kHostIssue = UINT32_MAX;

struct Event {
  double time;
  int actor;
  uint32_t node;
  uint32_t version = 0;  // a compute node's end, rescheduled when its rate changes; kHostIssue
  bool operator>(const Event& o) const { return std::tie(time, actor, node) > std::tie(o.time, o.actor, o.node); }
};

class Engine {
 public:
  Engine(const std::vector<SimStage>& st, const RankLayout& layout, int64_t max_key, const NetworkModel& net,
         const SimOptions& opt)
      : st_(st), L_(layout), max_key_(max_key), net_(net), opt_(opt),
        sharing_(opt.streams == SimStreams::kMegatron && !net.astra &&
                 (net.comm_sm_share_domain > 0 || net.comm_sm_share_scale_out > 0 || net.dispatcher_sm_share > 0 ||
                  net.dispatcher_overlap_rate < 1)),
        host_(opt.streams == SimStreams::kMegatron && !net.astra &&
              (opt.host_sync_micros > 0 || opt.host_launch_micros > 0)) {}

  Result<SimResult> run() {
    SC_RETURN_IF_ERROR(plan());
    // A second compute stream needs the rates even without SM sharing.
    if (opt_.streams == SimStreams::kMegatron && !net_.astra)
      for (const StagePlan& pl : plans_) sharing_ = sharing_ || pl.has_shared;
    SC_RETURN_IF_ERROR(classes());
    size_t total = 0;
    for (const Actor& x : actors_) total += plans_[x.stage].n;
    states_.assign(total, NodeState{});
    waiting_.assign(total, 0);
    if (host_) host_at_.assign(total, 0), held_.assign(total, 0);
    total = 0;
    for (Actor& x : actors_) {
      x.s = states_.data() + total;
      x.waiting = waiting_.data() + total;
      if (host_) x.host_at = host_at_.data() + total, x.held = held_.data() + total;
      total += plans_[x.stage].n;
    }
    for (size_t a = 0; a < actors_.size(); ++a) {
      if ((a & 255) == 0) SC_RETURN_IF_ERROR(check_cancelled("the simulation"));
      init(static_cast<int>(a));
    }
    for (size_t a = 0; a < actors_.size(); ++a) issue(static_cast<int>(a), 0);
    // Ctrl-C, SIGTERM, plan's time limit (base/cancel.h): looked at every
    // 2^14 events (about a millisecond), so a stop lands well within a
    // second even in a simulation of minutes.
    for (uint64_t n = 1; !events_.empty(); ++n) {
      if ((n & 16383) == 0) SC_RETURN_IF_ERROR(check_cancelled("the simulation"));
      Event e = events_.top();
      events_.pop();
      if (host_ && e.version == kHostIssue) {
        host_issued(e);
        continue;
      }
      if (stale(e)) continue;
      finish(e);
    }
    for (size_t a = 0; a < actors_.size(); ++a) {
      const Actor& x = actors_[a];
      const auto& nodes = st_[x.stage].program->nodes;
      if (x.finished == static_cast<int64_t>(nodes.size())) continue;
      std::string at;
      for (size_t i = 0; i < nodes.size(); ++i)
        if (x.waiting[i] >= 0) {
          at = " at node " + std::to_string(i) + " '" + st_[x.stage].program->node_name(i) + "'";
          break;
        }
      return make_error(ErrorCode::kInternal, "the job's programs do not run to completion: rank " +
                                                  std::to_string(x.rank) + " hangs" + at);
    }
    return result();
  }

 private:
  Status plan() {
    plans_.resize(st_.size());
    size_t total = 0;
    for (const SimStage& x : st_) total += x.program->nodes.size() + 1;
    infos_.assign(total, StagePlan::Info{});
    // Children are filled stage by stage from a copy of the stage's
    // dependencies (small, reused) rather than a second read of its nodes.
    children_.clear();
    children_.reserve(2 * total);
    std::vector<size_t> child_off(st_.size());
    std::vector<uint32_t> flat, flat_at, at;
    size_t base = 0;
    for (size_t s = 0; s < st_.size(); ++s) {
      const RoleProgram& p = *st_[s].program;
      StagePlan& pl = plans_[s];
      const size_t n = p.nodes.size();
      pl.n = n;
      pl.info = infos_.data() + base;
      pl.ndeps.assign(n, 0);
      std::map<int, int> axis_slot;
      std::map<PeerSpec, int> peer_slot;
      // The program's axis indices as this engine's (interned at first use,
      // in node order), and their comm kinds.
      std::vector<int> gaxis(p.axes.size(), -1), gkind(p.axes.size());
      for (size_t a = 0; a < p.axes.size(); ++a) gkind[a] = comm_kind_of_axis(p.axes[a]);
      const auto global_axis = [&](uint8_t a) {
        if (gaxis[a] < 0) gaxis[a] = axis_id(p.axes[a]);
        return gaxis[a];
      };
      // Slots of the program's axes and of pipeline peers, cached in front
      // of the maps (one lookup per node otherwise).
      std::vector<int> coll_slot(p.axes.size(), -1);
      int64_t last_peer_stage = -2;
      int last_peer_slot = -1;
      flat.clear();
      flat_at.assign(n + 1, 0);
      for (size_t i = 0; i < n; ++i) {
        const ProgramNode& x = p.nodes[i];
        if (x.id != i) return make_error(ErrorCode::kInternal, "stage " + std::to_string(s) + ": node ids out of order");
        flat_at[i] = static_cast<uint32_t>(flat.size());
        for (uint64_t d : x.deps) {
          if (d >= i) return make_error(ErrorCode::kInternal, "stage " + std::to_string(s) + " node " + std::to_string(i) + ": dependency " + std::to_string(d) + " is not earlier");
          pl.info[d + 1].child_at++;
          pl.ndeps[i]++;
          flat.push_back(static_cast<uint32_t>(d));
        }
        StagePlan::Info& in = pl.info[i];
        in.nk = static_cast<uint8_t>(x.kind);
        if (i < st_[s].host_sync.size()) in.host_sync = st_[s].host_sync[i];
        const uint8_t side = i < p.side_stream.size() ? p.side_stream[i] : 0;
        if (x.kind == TraceNodeKind::kCompute) {
          in.val = static_cast<int64_t>(x.duration_micros);
          if (side == 2 && opt_.streams == SimStreams::kMegatron) in.stream = kShared, pl.has_shared = true;
          continue;
        }
        in.val = x.comm_size;
        in.tag = x.tag;
        in.coll = static_cast<uint8_t>(x.coll);
        const uint8_t ax = p.node_axis[i];
        if (x.kind == TraceNodeKind::kCollective) {
          if (coll_slot[ax] < 0) {
            int g = global_axis(ax);
            auto [it, fresh] = axis_slot.emplace(g, static_cast<int>(pl.axes.size()));
            if (fresh) pl.axes.push_back(g);
            coll_slot[ax] = it->second;
          }
          in.slot = coll_slot[ax];
          in.kind = static_cast<int8_t>(gkind[ax]);
          if (opt_.streams == SimStreams::kAstra) in.stream = kComm;
          else if (side == 2) in.stream = kShared, pl.has_shared = true;  // shared experts' stream
          else if (side == 4) in.stream = kEp;  // the EP all-to-all overlap's communication stream
          else if (side) in.stream = kSide;  // TE userbuffers
          else in.stream = in.kind <= 2 ? kCompute : kReduce;  // tp, cp, ep: compute stream
        } else {
          PeerSpec ps;
          const int64_t off = i < p.ring_offset.size() ? p.ring_offset[i] : 0;
          if (off != 0) ps.axis = global_axis(ax), ps.offset = off;
          else ps.stage = p.peer_stage[i];
          if (off == 0 && ps.stage == last_peer_stage) {
            in.slot = last_peer_slot;
          } else {
            auto [it, fresh] = peer_slot.emplace(ps, static_cast<int>(pl.peers.size()));
            if (fresh) pl.peers.push_back(ps);
            in.slot = it->second;
            if (off == 0) last_peer_stage = ps.stage, last_peer_slot = in.slot;
          }
          in.kind = static_cast<int8_t>(off != 0 ? gkind[ax] : 3);
          in.stream = x.kind == TraceNodeKind::kRecv                          ? -1
                      : !(opt_.streams == SimStreams::kMegatron && off == 0) ? kComm
                      : side == 3                                             ? kPipe  // overlap_p2p_comm
                                                                              : kCompute;
        }
      }
      flat_at[n] = static_cast<uint32_t>(flat.size());
      for (size_t i = 0; i < n; ++i) pl.info[i + 1].child_at += pl.info[i].child_at;
      base += n + 1;
      child_off[s] = children_.size();
      children_.resize(children_.size() + pl.info[n].child_at);
      uint32_t* child = children_.data() + child_off[s];
      at.resize(n);
      for (size_t i = 0; i < n; ++i) at[i] = pl.info[i].child_at;
      for (size_t i = 0; i < n; ++i)
        for (uint32_t k = flat_at[i]; k < flat_at[i + 1]; ++k) child[at[flat[k]]++] = static_cast<uint32_t>(i);
    }
    for (size_t s = 0; s < st_.size(); ++s) plans_[s].child = children_.data() + child_off[s];
    return ok_status();
  }

  int axis_id(const std::string& a) {
    for (size_t i = 0; i < axis_names_.size(); ++i)
      if (axis_names_[i] == a) return static_cast<int>(i);
    axis_names_.push_back(a);
    return static_cast<int>(axis_names_.size()) - 1;
  }

  int64_t peer_of(int64_t r, const PeerSpec& p) const {
    if (p.axis < 0) return L_.with_coord(r, "pp", p.stage);
    const std::string& ax = axis_names_[static_cast<size_t>(p.axis)];
    const int64_t deg = L_.degree(ax);
    const int64_t c = ((L_.coord(r, ax) + p.offset) % deg + deg) % deg;
    return L_.with_coord(r, ax, c);
  }

  // The symmetry classes (colors) of every rank, then one actor per class.
  Status classes() {
    const int64_t world = L_.world_size();
    const size_t na = axis_names_.size();
    std::vector<int> stage_of(static_cast<size_t>(world));
    for (int64_t r = 0; r < world; ++r) stage_of[r] = static_cast<int>(L_.coord(r, "pp"));
    if (static_cast<int64_t>(st_.size()) != L_.degree("pp"))
      return make_error(ErrorCode::kInternal, "one program per pipeline stage expected");
    // Group key of every rank on every axis its stage uses.
    std::vector<std::vector<int64_t>> gid(na, std::vector<int64_t>(static_cast<size_t>(world), -1));
    std::vector<GroupShapeBuilder> builders(static_cast<size_t>(max_key_) + 1);
    for (int64_t r = 0; r < world; ++r) {
      if ((r & 4095) == 0) SC_RETURN_IF_ERROR(check_cancelled("the simulation"));
      for (int g : plans_[stage_of[r]].axes) {
        int64_t k = L_.group_id(r, axis_names_[g]);
        if (k < 1 || k > max_key_)
          return make_error(ErrorCode::kInternal, "group key " + std::to_string(k) + " of rank " + std::to_string(r) + " on " + axis_names_[g] + " out of range");
        gid[g][r] = k;
        builders[static_cast<size_t>(k)].add(net_, r);
      }
    }
    std::vector<GroupShape> shapes(builders.size());
    for (size_t k = 0; k < builders.size(); ++k) shapes[k] = builders[k].finish(net_);
    builders.clear();

    std::vector<int> color(static_cast<size_t>(world));
    int colors = 0;
    if (opt_.exhaustive) {
      for (int64_t r = 0; r < world; ++r) color[r] = static_cast<int>(r);
      colors = static_cast<int>(world);
    } else {
      std::map<std::vector<int64_t>, int> ids;
      std::vector<int64_t> key;
      for (int64_t r = 0; r < world; ++r) {
        if ((r & 4095) == 0) SC_RETURN_IF_ERROR(check_cancelled("the simulation"));
        const StagePlan& pl = plans_[stage_of[r]];
        key.assign(1, stage_of[r]);
        for (int g : pl.axes) {
          const GroupShape& s = shapes[gid[g][r]];
          key.insert(key.end(), {s.n, s.domains, s.per_domain, s.astra_dim, s.world ? 1 : 0});
        }
        for (const PeerSpec& p : pl.peers) key.push_back(link_class(net_, r, peer_of(r, p)));
        color[r] = ids.emplace(key, static_cast<int>(ids.size())).first->second;
      }
      colors = static_cast<int>(ids.size());
    }
    // Refine until members and peers of alike ranks are alike too.
    std::vector<std::vector<int>> gcol;
    for (;;) {
      gcol.assign(static_cast<size_t>(max_key_) + 1, {});
      for (size_t g = 0; g < na; ++g)
        for (int64_t r = 0; r < world; ++r)
          if (gid[g][r] > 0) gcol[gid[g][r]].push_back(color[r]);
      for (auto& v : gcol) {
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
      }
      if (opt_.exhaustive) break;
      std::map<std::vector<int64_t>, int> ids;
      std::vector<int> next(color.size());
      std::vector<int64_t> key;
      for (int64_t r = 0; r < world; ++r) {
        if ((r & 4095) == 0) SC_RETURN_IF_ERROR(check_cancelled("the simulation"));
        const StagePlan& pl = plans_[stage_of[r]];
        key.assign(1, color[r]);
        for (int g : pl.axes) {
          const auto& v = gcol[gid[g][r]];
          key.push_back(static_cast<int64_t>(v.size()));
          key.insert(key.end(), v.begin(), v.end());
        }
        for (const PeerSpec& p : pl.peers) key.push_back(color[peer_of(r, p)]);
        next[r] = ids.emplace(key, static_cast<int>(ids.size())).first->second;
      }
      const int n = static_cast<int>(ids.size());
      color.swap(next);
      if (n == colors) break;
      colors = n;
    }
    color_ = color;
    actors_.resize(static_cast<size_t>(colors));
    std::vector<bool> seen(static_cast<size_t>(colors), false);
    for (int64_t r = 0; r < world; ++r) {
      const int c = color[r];
      if (seen[c]) continue;
      seen[c] = true;
      Actor& a = actors_[c];
      a.stage = stage_of[r];
      a.rank = r;
      const StagePlan& pl = plans_[a.stage];
      a.slot_of_axis.assign(na, -1);
      for (size_t s = 0; s < pl.axes.size(); ++s) {
        const int g = pl.axes[s];
        a.slot_of_axis[g] = static_cast<int>(s);
        a.req.push_back(gcol[gid[g][r]]);
        a.shape.push_back(shapes[gid[g][r]]);
      }
      for (const PeerSpec& p : pl.peers) {
        const int64_t q = peer_of(r, p);
        a.peer_rank.push_back(q);
        a.peer_actor.push_back(color[q]);
      }
    }
    dependents_.assign(na, std::vector<std::vector<int>>(actors_.size()));
    users_.assign(na, 0);
    for (size_t a = 0; a < actors_.size(); ++a) {
      const StagePlan& pl = plans_[actors_[a].stage];
      for (size_t s = 0; s < pl.axes.size(); ++s)
        for (int b : actors_[a].req[s]) dependents_[pl.axes[s]][b].push_back(static_cast<int>(a));
    }
    // An actor whose group on an axis holds only its own class (every
    // member alike) waits for nobody there and nobody waits for it: its
    // collectives start at issue, without an instance table entry.
    for (size_t a = 0; a < actors_.size(); ++a) {
      Actor& x = actors_[a];
      const StagePlan& pl = plans_[x.stage];
      x.solo.assign(pl.axes.size(), 0);
      for (size_t s = 0; s < pl.axes.size(); ++s) {
        const auto& dep = dependents_[pl.axes[s]][a];
        x.solo[s] = x.req[s].size() == 1 && x.req[s][0] == static_cast<int>(a) && dep.size() == 1 &&
                    dep[0] == static_cast<int>(a);
        if (!x.solo[s]) users_[pl.axes[s]]++;
      }
    }
    return ok_status();
  }

  std::string node_name(int a, uint32_t i) const { return st_[actors_[a].stage].program->node_name(i); }

  void init(int ai) {
    Actor& a = actors_[ai];
    const StagePlan& pl = plans_[a.stage];
    const size_t n = pl.n;
    for (size_t i = 0; i < n; ++i) a.waiting[i] = pl.ndeps[i];
    a.issued.assign(pl.axes.size(), 0);
    nodes_ += static_cast<int64_t>(n);
    if (host_) host_advance(ai, 0);
    for (size_t i = 0; i < n; ++i)
      if (a.waiting[i] == 0) make_ready(ai, static_cast<uint32_t>(i), 0);
  }

  void make_ready(int ai, uint32_t i, double now) {
    Actor& a = actors_[ai];
    a.s[i].start = now;  // the ready time until the node starts
    const int s = plans_[a.stage].info[i].stream;
    if (s < 0) {
      post_p2p(ai, i, now);  // receives are outstanding at once
      return;
    }
    if (host_) {
      if (i >= a.host_next) {  // not issued by the host yet
        a.held[i] = 1;
        if (i == a.host_next && plans_[a.stage].info[i].host_sync) host_advance(ai, now);
        return;
      }
      if (a.host_at[i] > now) {
        events_.push({a.host_at[i], ai, i, kHostIssue});
        return;
      }
    }
    a.ready[s].push(i);
  }

  // ---- the host ---------------------------------------------------------------
  // It issues the actor's nodes in id order, host_launch_micros apart, and
  // stops at a host_sync node whose dependencies have not finished; once
  // they have, it spends host_sync_micros and issues that node and the
  // next ones. A node that became ready before its issue is held until
  // then. Receives (no stream) are posted at once and cost the host nothing.
  void host_advance(int ai, double now) {
    Actor& a = actors_[ai];
    const StagePlan& pl = plans_[a.stage];
    while (a.host_next < pl.n) {
      const uint32_t j = a.host_next;
      const StagePlan::Info& in = pl.info[j];
      double t = a.host_t;
      if (in.host_sync) {
        if (a.waiting[j] != 0) break;  // the host waits for the device here
        t = std::max(t, a.s[j].start) + opt_.host_sync_micros;  // from the ready time
      }
      if (in.stream >= 0) t += opt_.host_launch_micros;
      a.host_at[j] = a.host_t = t;
      a.host_next = j + 1;
      if (a.held[j]) {
        a.held[j] = 0;
        if (t > now) events_.push({t, ai, j, kHostIssue});
        else a.ready[in.stream].push(j);
      }
    }
  }

  void host_issued(const Event& e) {
    Actor& a = actors_[e.actor];
    // Ready from now: a wait for the stream after this is the stream's, not
    // the host's (the critical path's stream predecessor).
    a.s[e.node].start = e.time;
    a.ready[plans_[a.stage].info[e.node].stream].push(e.node);
    issue(e.actor, e.time);
  }

  // The node that freed the stream, when the node waited for it.
  void stream_pred(int ai, uint32_t i, double now, int64_t last) {
    Actor& a = actors_[ai];
    if (now > a.s[i].start && last >= 0) {
      a.s[i].pred_actor = ai;
      a.s[i].pred_node = static_cast<uint32_t>(last);
    }
  }

  void issue(int ai, double now) {
    Actor& a = actors_[ai];
    for (int s = 0; s < kStreams; ++s) {
      if (a.busy[s] || a.ready[s].empty()) continue;
      const uint32_t i = a.ready[s].top();
      a.ready[s].pop();
      a.busy[s] = true;
      stream_pred(ai, i, now, a.last[s]);
      const StagePlan::Info& in = plans_[a.stage].info[i];
      const TraceNodeKind k = in.node_kind();
      if (k == TraceNodeKind::kCompute) {
        const double d = static_cast<double>(in.val);
        a.s[i].start = now;
        a.s[i].end = now + d;
        uint32_t version = 0;
        if (sharing_) {
          const int k = s == kShared ? 1 : 0;
          a.running[k] = i;
          a.work_left[k] = d;
          a.seg_start[k] = now;
          a.rate[k] = rate_of(a, k);
          a.s[i].end = now + a.work_left[k] / a.rate[k];
          version = ++a.version[k];
          if (a.running[1 - k] >= 0) retime(ai, 1 - k, now);  // now two share the GPU
          else retime_flows(ai, now);                          // the GPU computes from now
        }
        events_.push({a.s[i].end, ai, i, version});
      } else if (k == TraceNodeKind::kCollective) {
        join(ai, i, now);
      } else {
        post_p2p(ai, i, now);
      }
    }
  }

  struct Slot {
    int missing = -1;
    double start = 0;
    int last_actor = -1;
    uint32_t last_node = 0, node = 0;
  };
  struct Inst {
    std::unordered_map<int, Slot> slots;
    int64_t done = 0;
  };

  // Collective node n of actor ai starts at `start`.
  void start_collective(int ai, uint32_t n, int s, double start) {
    Actor& a = actors_[ai];
    const StagePlan::Info& in = plans_[a.stage].info[n];
    a.s[n].start = start;
    const auto coll = static_cast<CollectiveType>(in.coll);
    const double d = in.kind == 2 ? expert_collective_micros(net_, a.shape[s], coll, in.val)  // ep
                                  : collective_micros(net_, a.shape[s], coll, in.val);
    share(ai, n, a.shape[s].domains > 1, +1, start);
    if (dispatcher_leg(in)) {  // paced by the compute beside it, from its start on
      const double r = flow_rate(a);
      a.flows.push_back({n, d, start, r, 1});
      a.s[n].end = start + d / r;
      events_.push({a.s[n].end, ai, n, 1});
      return;
    }
    a.s[n].end = start + d;
    events_.push({a.s[n].end, ai, n});
  }

  void join(int bi, uint32_t i, double now) {
    Actor& b = actors_[bi];
    const int s = plans_[b.stage].info[i].slot;
    const int g = plans_[b.stage].axes[s];
    const int64_t k = b.issued[s]++;
    if (b.solo[s]) {
      start_collective(bi, i, s, now);
      return;
    }
    const uint64_t key = (static_cast<uint64_t>(g) << 48) | static_cast<uint64_t>(k);
    Inst& inst = insts_[key];
    for (int ai : dependents_[g][bi]) {
      Slot& sl = inst.slots[ai];
      Actor& a = actors_[ai];
      if (sl.missing < 0) sl.missing = static_cast<int>(a.req[a.slot_of_axis[g]].size());
      --sl.missing;
      if (now >= sl.start) sl.start = now, sl.last_actor = bi, sl.last_node = i;
      if (ai == bi) sl.node = i;
      if (sl.missing > 0) continue;
      const uint32_t n = sl.node;
      if (sl.last_actor != ai) {  // waited for a member: continue the path before its issue
        a.s[n].pred_actor = actors_[sl.last_actor].s[sl.last_node].pred_actor;
        a.s[n].pred_node = actors_[sl.last_actor].s[sl.last_node].pred_node;
      }
      start_collective(ai, n, a.slot_of_axis[g], sl.start);
      inst.slots.erase(ai);
      inst.done++;
    }
    if (inst.done == users_[g]) insts_.erase(key);
  }

  struct P2PKey {
    int from, to;
    int32_t tag;
    bool operator==(const P2PKey&) const = default;
  };
  struct P2PHash {
    size_t operator()(const P2PKey& k) const {
      uint64_t h = static_cast<uint32_t>(k.from) * 0x9E3779B97F4A7C15ull;
      h ^= (static_cast<uint64_t>(static_cast<uint32_t>(k.to)) << 32 | static_cast<uint32_t>(k.tag)) + (h << 6) + (h >> 2);
      return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ull);
    }
  };
  // Posted and unmatched sends or receives of one key, oldest first: a
  // post matches at once when the other side waits, so the queue holds
  // one side only.
  struct P2PPost {
    int actor;
    uint32_t node;
    double time;
  };
  struct P2P {
    bool sends = false;
    size_t head = 0;
    std::vector<P2PPost> q;
  };

  void post_p2p(int ai, uint32_t i, double now) {
    const Actor& a = actors_[ai];
    const StagePlan::Info& in = plans_[a.stage].info[i];
    const int peer = a.peer_actor[in.slot];
    const bool send = in.node_kind() == TraceNodeKind::kSend;
    const P2PKey key{send ? ai : peer, send ? peer : ai, in.tag};
    auto [it, fresh] = p2p_.try_emplace(key);
    P2P& q = it->second;
    if (fresh || q.head == q.q.size() || q.sends == send) {
      if (q.head == q.q.size()) q.q.clear(), q.head = 0;
      q.sends = send;
      q.q.push_back({ai, i, now});
      return;
    }
    const P2PPost other = q.q[q.head++];
    if (q.head == q.q.size()) p2p_.erase(it);
    const int sa = send ? ai : other.actor, ra = send ? other.actor : ai;
    const uint32_t sn = send ? i : other.node, rn = send ? other.node : i;
    const double ts = send ? now : other.time, tr = send ? other.time : now;
    Actor& S = actors_[sa];
    Actor& R = actors_[ra];
    const double start = std::max(ts, tr);
    const StagePlan::Info& sin = plans_[S.stage].info[sn];
    const double end = start + p2p_micros(net_, S.rank, S.peer_rank[sin.slot], sin.val);
    S.s[sn].start = R.s[rn].start = start;
    S.s[sn].end = R.s[rn].end = end;
    const bool cross = domain_of(net_, S.rank) != domain_of(net_, S.peer_rank[sin.slot]);
    share(sa, sn, cross, +1, start);
    share(ra, rn, cross, +1, start);
    if (ts >= tr) R.s[rn].pred_actor = S.s[sn].pred_actor, R.s[rn].pred_node = S.s[sn].pred_node;
    events_.push({end, sa, sn});
    events_.push({end, ra, rn});
  }

  // ---- SM sharing (kMegatron) -----------------------------------------------

  bool stale(const Event& e) const {
    // Every start or rate change of a compute node bumps its actor's
    // version; only the latest end event of a compute node counts. So for
    // a DeepEP leg's own version (version 0: a transfer of fixed time).
    if (!sharing_) return false;
    const Actor& a = actors_[e.actor];
    const StagePlan::Info& in = plans_[a.stage].info[e.node];
    if (in.node_kind() == TraceNodeKind::kCompute) return e.version != a.version[in.stream == kShared ? 1 : 0];
    if (e.version == 0) return false;
    for (const Actor::Flow& f : a.flows)
      if (f.node == e.node) return f.version != e.version;
    return true;  // the leg ended earlier, at a faster rate
  }

  // ---- DeepEP's legs beside compute ------------------------------------------

  // A DeepEP dispatch or combine leg of a training job whose kernels slow
  // down beside compute (NetworkModel::dispatcher_overlap_rate).
  bool dispatcher_leg(const StagePlan::Info& in) const {
    return sharing_ && net_.dispatcher_overlap_rate < 1 && net_.moe_dispatcher == NetworkModel::Dispatcher::kDeepEP &&
           in.kind == 2 && static_cast<CollectiveType>(in.coll) == CollectiveType::kAllToAll;
  }
  double flow_rate(const Actor& a) const {
    return a.running[0] >= 0 || a.running[1] >= 0 ? net_.dispatcher_overlap_rate : 1.0;
  }
  // The rank's compute started or stopped: its legs in flight continue at
  // their new rate from now.
  void retime_flows(int ai, double now) {
    Actor& a = actors_[ai];
    if (a.flows.empty()) return;
    const double r = flow_rate(a);
    for (Actor::Flow& f : a.flows) {
      if (f.rate == r) continue;
      f.work_left = std::max(0.0, f.work_left - (now - f.seg_start) * f.rate);
      f.seg_start = now;
      f.rate = r;
      a.s[f.node].end = now + f.work_left / r;
      events_.push({a.s[f.node].end, ai, f.node, ++f.version});
    }
  }

  // The rate of compute stream k's node: slowed by the transfers beside
  // it, halved while the other compute stream runs a node too.
  double rate_of(const Actor& a, int k) const {
    double f = 0;
    if (a.sharing[0] > 0 || (k == 1 && a.sharing_cs[0] > 0)) f = std::max(f, net_.comm_sm_share_domain);
    if (a.sharing[1] > 0 || (k == 1 && a.sharing_cs[1] > 0)) f = std::max(f, net_.comm_sm_share_scale_out);
    if (a.sharing[2] > 0 || (k == 1 && a.sharing_cs[2] > 0)) f = std::max(f, net_.dispatcher_sm_share);
    const double r = 1.0 - std::min(f, 0.9);
    return a.running[1 - k] >= 0 ? r / 2 : r;
  }

  // Compute stream k's node in flight continues at its new rate from now.
  void retime(int ai, int k, double now) {
    Actor& a = actors_[ai];
    if (a.running[k] < 0) return;
    const double r = rate_of(a, k);
    if (r == a.rate[k]) return;
    const uint32_t n = static_cast<uint32_t>(a.running[k]);
    a.work_left[k] = std::max(0.0, a.work_left[k] - (now - a.seg_start[k]) * a.rate[k]);
    a.seg_start[k] = now;
    a.rate[k] = r;
    a.s[n].end = now + a.work_left[k] / r;
    events_.push({a.s[n].end, ai, n, ++a.version[k]});
  }

  // A transfer of node i starts (+1) or ends (-1) at `now` on actor ai; if it
  // runs beside the compute stream, the compute node in flight continues at
  // the new rate from now.
  void share(int ai, uint32_t i, bool cross, int delta, double now) {
    if (!sharing_) return;
    Actor& a = actors_[ai];
    const int s = plans_[a.stage].info[i].stream;
    // On the compute stream nothing of its own runs beside it; the shared
    // experts' stream may.
    // DeepEP's dispatch and combine (the ep kind: its legs and in-node
    // exchange) hold their own SMs on any link.
    const int tier = net_.dispatcher_sm_share > 0 && plans_[a.stage].info[i].kind == 2 ? 2 : cross ? 1 : 0;
    (s == kCompute ? a.sharing_cs : a.sharing)[tier] += delta;
    if (s != kCompute) retime(ai, 0, now);
    retime(ai, 1, now);
  }

  void finish(const Event& e) {
    Actor& a = actors_[e.actor];
    const StagePlan& pl = plans_[a.stage];
    const StagePlan::Info& in = pl.info[e.node];
    const TraceNodeKind xk = in.node_kind();
    const int s = in.stream;
    if (sharing_ && xk == TraceNodeKind::kCompute) {
      const int k = s == kShared ? 1 : 0;
      if (static_cast<int64_t>(e.node) == a.running[k]) {
        a.running[k] = -1;
        retime(e.actor, 1 - k, e.time);  // the other compute stream has the GPU alone
        retime_flows(e.actor, e.time);   // or nothing computes from now
      }
    }
    if (s >= 0) a.busy[s] = false, a.last[s] = e.node;
    if (e.version != 0 && xk == TraceNodeKind::kCollective)  // a DeepEP leg's end: no longer paced
      std::erase_if(a.flows, [&](const Actor::Flow& f) { return f.node == e.node; });
    if (sharing_ && xk != TraceNodeKind::kCompute) {
      bool cross = false;
      if (xk == TraceNodeKind::kCollective) cross = a.shape[in.slot].domains > 1;
      else cross = domain_of(net_, a.rank) != domain_of(net_, a.peer_rank[in.slot]);
      share(e.actor, e.node, cross, -1, e.time);
    }
    a.waiting[e.node] = -1;
    a.finished++;
    step_ = std::max(step_, e.time);
    for (uint32_t ci = in.child_at; ci < pl.info[e.node + 1].child_at; ++ci) {
      const uint32_t c = pl.child[ci];
      if (--a.waiting[c] == 0) {
        a.s[c].pred_actor = e.actor;
        a.s[c].pred_node = e.node;
        make_ready(e.actor, c, e.time);
      }
    }
    issue(e.actor, e.time);
  }

  // ---- results -------------------------------------------------------------

  const char* compute_kind(int s, uint32_t i) const {
    const auto& ph = st_[s].phase;
    static const char* names[] = {"F", "B", "W", "O"};
    return i < ph.size() ? names[static_cast<int>(ph[i])] : "F";
  }

  SimStageResult stage_result(int ai, int64_t rank) const {
    const Actor& a = actors_[ai];
    const StagePlan& pl = plans_[a.stage];
    SimStageResult r;
    r.stage = a.stage;
    r.rank = rank;
    // Sweep: compute busy, else the kinds of communication in flight.
    // The order of edges at one time does not change the sweep (it
    // attributes [prev, t) before the first edge at t), so any order by
    // time will do: compute nodes run one at a time in id order, so their
    // edges come sorted (checked); only communication's are sorted, and
    // the sweep takes the earlier of the two lists' next edges. The lists
    // are reused from stage to stage (fresh ones would be first-touched
    // each time).
    const auto by_time = [](const Edge& x, const Edge& y) { return x.t < y.t; };
    std::vector<Edge>& comp = edge_scratch_[0];
    std::vector<Edge>& comm = edge_scratch_[1];
    comp.clear();
    comm.clear();
    for (size_t i = 0; i < pl.n; ++i) {
      if (host_ && pl.info[i].host_sync) r.host_syncs++;
      r.end = std::max(r.end, a.s[i].end);
      if (a.s[i].end <= a.s[i].start) continue;
      std::vector<Edge>& to = pl.info[i].kind < 0 ? comp : comm;
      to.push_back({a.s[i].start, pl.info[i].kind, +1});
      to.push_back({a.s[i].end, pl.info[i].kind, -1});
      if (pl.info[i].kind < 0) r.busy += a.s[i].end - a.s[i].start;
    }
    if (!std::is_sorted(comp.begin(), comp.end(), by_time)) std::sort(comp.begin(), comp.end(), by_time);
    std::sort(comm.begin(), comm.end(), by_time);
    int active[kNumCommKinds + 1] = {0};
    double prev = 0, idle = 0, computing = 0;  // computing: time with a compute node in flight
    // Priority when several kinds are in flight: the order of kCommKinds
    // with dp last (gradient reductions overlap most).
    size_t ci = 0, mi = 0;
    for (;;) {
      const bool done = ci == comp.size() && mi == comm.size();
      const bool from_comp = !done && (mi == comm.size() || (ci < comp.size() && !(comm[mi].t < comp[ci].t)));
      const Edge* edge = done ? nullptr : from_comp ? &comp[ci] : &comm[mi];
      const double t = done ? step_ : edge->t;
      if (t > prev && active[kNumCommKinds] == 0) {
        int k = -1;
        for (int j = 0; j < kNumCommKinds && k < 0; ++j)
          if (active[j] > 0) k = j;
        if (k >= 0) r.exposed[k] += t - prev;
        else idle += t - prev;
      } else if (t > prev) {
        computing += t - prev;
      }
      if (done) break;
      prev = std::max(prev, t);
      const int slot = edge->kind < 0 ? kNumCommKinds : edge->kind;
      active[slot] += edge->delta;
      if (from_comp) ++ci;
      else ++mi;
    }
    r.bubble = idle;
    // Two compute streams: busy is the time either computes, not the sum.
    if (pl.has_shared) r.busy = computing;
    if (opt_.timeline) r.timeline = timeline(ai);
    return r;
  }

  std::vector<SimInterval> timeline(int ai) const {
    const Actor& a = actors_[ai];
    const StagePlan& pl = plans_[a.stage];
    const SimStage& s = st_[a.stage];
    std::vector<SimInterval> out, comm[kNumCommKinds];
    for (size_t i = 0; i < pl.n; ++i) {
      if (a.s[i].end <= a.s[i].start) continue;
      const int32_t mb = i < s.micro_batch.size() ? s.micro_batch[i] : -1;
      if (pl.info[i].kind < 0) {
        const char* k = compute_kind(a.stage, static_cast<uint32_t>(i));
        // Joined to the previous interval when it starts where that one
        // ends or inside it (the shared experts' stream computes beside
        // the main one): the union, never shorter than either.
        if (!out.empty() && out.back().kind == k && out.back().micro_batch == mb &&
            a.s[i].start - out.back().end < 1e-9 && a.s[i].start >= out.back().start - 1e-9)
          out.back().end = std::max(out.back().end, a.s[i].end);
        else
          out.push_back({a.s[i].start, a.s[i].end, k, mb});
      } else {
        comm[pl.info[i].kind].push_back({a.s[i].start, a.s[i].end, kCommKinds[pl.info[i].kind], mb});
      }
    }
    // Compute coverage (compute nodes run one at a time, in order, unless
    // the shared experts' stream computes beside), to split each
    // communication interval into hidden and exposed pieces.
    std::vector<SimInterval> by_start;
    if (pl.has_shared) {
      by_start = out;
      std::stable_sort(by_start.begin(), by_start.end(),
                       [](const SimInterval& x, const SimInterval& y) { return x.start < y.start; });
    }
    std::vector<std::pair<double, double>> cover;
    for (const SimInterval& x : pl.has_shared ? by_start : out) {
      if (!cover.empty() && x.start <= cover.back().second + 1e-9) cover.back().second = std::max(cover.back().second, x.end);
      else cover.push_back({x.start, x.end});
    }
    for (auto& v : comm) {
      std::sort(v.begin(), v.end(), [](const SimInterval& x, const SimInterval& y) { return x.start < y.start; });
      std::vector<SimInterval> merged;
      for (const SimInterval& x : v) {
        if (!merged.empty() && x.start <= merged.back().end + 1e-9) {
          merged.back().end = std::max(merged.back().end, x.end);
          if (merged.back().micro_batch != x.micro_batch) merged.back().micro_batch = -1;
        } else {
          merged.push_back(x);
        }
      }
      size_t ci = 0;
      for (const SimInterval& x : merged) {
        while (ci < cover.size() && cover[ci].second <= x.start) ++ci;
        double t = x.start;
        for (size_t k = ci; t < x.end; ++k) {
          // [t, a): no compute; [a, b): compute (clipped to the interval)
          const double a = k < cover.size() ? std::clamp(cover[k].first, t, x.end) : x.end;
          const double b = k < cover.size() ? std::clamp(cover[k].second, a, x.end) : x.end;
          const auto piece = [&](double s0, double s1, int8_t e) {
            if (s1 - s0 <= 1e-9) return;
            SimInterval y = x;
            y.start = s0, y.end = s1, y.exposed = e;
            if (!out.empty() && out.back().kind == y.kind && out.back().exposed == e && s0 - out.back().end < 1e-9)
              out.back().end = s1;
            else
              out.push_back(y);
          };
          piece(t, a, 1);
          piece(a, b, 0);
          t = b;
        }
      }
    }
    return out;
  }

  static std::string ms(double us) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f ms", us / 1000.0);
    return b;
  }

  std::vector<std::string> critical_path() const {
    int ba = -1;
    uint32_t bn = 0;
    for (size_t a = 0; a < actors_.size(); ++a)
      for (size_t i = 0; i < plans_[actors_[a].stage].n; ++i)
        if (ba < 0 || actors_[a].s[i].end > actors_[ba].s[bn].end) ba = static_cast<int>(a), bn = static_cast<uint32_t>(i);
    if (ba < 0) return {};
    // Walk back, then total the path's time by what it is.
    std::map<std::string, double> by_what;
    std::map<std::string, std::set<int>> stages;
    double covered = 0;
    int64_t count = 0;
    int a = ba;
    uint32_t n = bn;
    std::string last_name;
    for (;;) {
      const Actor& x = actors_[a];
      const int8_t kind = plans_[x.stage].info[n].kind;
      const std::string name = node_name(a, n);
      std::string what = kind < 0 ? std::string("compute ") + compute_kind(x.stage, n) : std::string(kCommKinds[kind]) + " communication";
      by_what[what] += x.s[n].end - x.s[n].start;
      stages[what].insert(x.stage);
      covered += x.s[n].end - x.s[n].start;
      if (count == 0) last_name = "stage " + std::to_string(x.stage) + " '" + name + "'";
      ++count;
      if (x.s[n].pred_actor < 0) {
        std::vector<std::string> lines;
        lines.push_back("critical path: " + std::to_string(count) + " nodes from stage " + std::to_string(x.stage) +
                        " '" + name + "' to " + last_name + ", " + ms(step_));
        std::vector<std::pair<double, std::string>> sorted;
        for (auto& [w, v] : by_what) sorted.push_back({-v, w});
        std::sort(sorted.begin(), sorted.end());
        for (auto& [v, w] : sorted) {
          std::string st;
          for (int s : stages[w]) st += (st.empty() ? "" : ",") + std::to_string(s);
          lines.push_back("  " + w + ": " + ms(-v) + " (stages " + st + ")");
        }
        if (step_ - covered > 1e-6)
          lines.push_back(std::string(!host_                         ? "  waiting (latency not attributed to a node): "
                                      : opt_.host_launch_micros > 0 && opt_.host_sync_micros > 0
                                          ? "  waiting (latency, the host's syncs and its issue, not attributed to a node): "
                                      : opt_.host_sync_micros > 0 ? "  waiting (latency and the host's syncs, not attributed to a node): "
                                                                  : "  waiting (latency and the host's issue, not attributed to a node): ") +
                          ms(step_ - covered));
        return lines;
      }
      const int pa = x.s[n].pred_actor;
      n = x.s[n].pred_node;
      a = pa;
    }
  }

  Result<SimResult> result() const {
    SimResult r;
    r.step = step_;
    r.world = L_.world_size();
    r.classes = static_cast<int64_t>(actors_.size());
    r.nodes_simulated = nodes_;
    for (int64_t s = 0; s < static_cast<int64_t>(st_.size()); ++s) {
      const int64_t rank = L_.with_coord(0, "pp", s);
      r.stages.push_back(stage_result(color_[rank], rank));
    }
    r.critical_path = critical_path();
    return r;
  }

  const std::vector<SimStage>& st_;
  const RankLayout& L_;
  int64_t max_key_;
  const NetworkModel& net_;
  SimOptions opt_;
  bool sharing_ = false;
  bool host_ = false;  // a host timeline (SimOptions::host_sync_micros, host_launch_micros)
  std::vector<double> host_at_;  // every actor's (Actor::host_at points here)
  std::vector<uint8_t> held_;    // every actor's (Actor::held points here)
  std::vector<StagePlan> plans_;
  std::vector<StagePlan::Info> infos_;  // every plan's info (StagePlan::info points here)
  std::vector<uint32_t> children_;      // every plan's children
  std::vector<NodeState> states_;       // every actor's (Actor::s points here)
  std::vector<int32_t> waiting_;        // every actor's (Actor::waiting points here)
  std::vector<std::string> axis_names_;
  std::vector<Actor> actors_;
  std::vector<int> color_;
  std::vector<std::vector<std::vector<int>>> dependents_;  // axis -> issuer -> actors waiting on it
  std::vector<int64_t> users_;                            // axis -> actors using it
  // (axis << 48 | k-th collective); (sender actor, receiver actor, tag).
  // Every receive is posted at start, so the p2p table holds the whole
  // run's receives: hashed, not a tree.
  std::unordered_map<uint64_t, Inst> insts_;
  std::unordered_map<P2PKey, P2P, P2PHash> p2p_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  struct Edge { double t; int kind; int delta; };  // stage_result's sweep; kind -1 = compute
  mutable std::vector<Edge> edge_scratch_[2];
  double step_ = 0;
  int64_t nodes_ = 0;
};

}  // namespace

Result<SimResult> simulate_programs(const std::vector<SimStage>& stages, const RankLayout& layout,
                                    int64_t max_group_key, const NetworkModel& net, const SimOptions& opt) {
  for (const SimStage& s : stages)
    if (!s.program) return make_error(ErrorCode::kInternal, "simulate: a stage has no program");
  return Engine(stages, layout, max_group_key, net, opt).run();
}

}  // namespace sc
