// RankEncoder: see export.h.
//
// Per role: a TraceTemplate (the role's bytes with holes) and a way to get
// a rank's per-rank values of those holes:
//  - a collective's group key is RankLayout::group_id(rank, axis) of its
//    mesh axis, a send/recv's peer is RankLayout::with_coord(rank, "pp",
//    peer stage) — instantiate_rank's substitution — computed once per
//    distinct axis / stage per rank, without copying the nodes;
//  - a role whose program lacks those tables: instantiate_rank on a
//    skeleton of the role that keeps only the hole nodes (names and deps
//    dropped).
// create() compares a few ranks with the reference path (instantiate_rank +
// write_chakra_trace); on a mismatch it disables the fast path rather than
// write different bytes.
#include "api/export.h"

#include <algorithm>
#include <string>

#include "api/astrasim.h"
#include "api/serving.h"
#include "api/state.h"
#include "base/json.h"
#include "base/sha256.h"
#include "emit/chakra_writer.h"
#include "emit/trace_template.h"
#include "trace/lower.h"

namespace sc {

namespace {

// The rank roles of a generator state: one per pipeline stage (every rank
// of stage k runs program_of(k)); the role of a rank is its pp coordinate.
std::vector<const RoleProgram*> role_programs(const GeneratorState& s) {
  std::vector<const RoleProgram*> out;
  for (int64_t stage = 0; stage < s.num_stages(); ++stage) out.push_back(&s.program_of(stage));
  return out;
}
size_t role_of(const GeneratorState& s, int64_t rank) { return static_cast<size_t>(s.layout.coord(rank, "pp")); }

// First rank of each role (a sample for its template).
int64_t first_rank_of_role(const GeneratorState& s, size_t role, int64_t world) {
  for (int64_t r = 0; r < world; ++r)
    if (role_of(s, r) == role) return r;
  return -1;
}

}  // namespace

// A per-rank value a hole takes: the group key of a mesh axis, the rank of
// a pipeline stage (a send/recv peer) or of a ring neighbour.
// Ring-attention peers are an offset along a mesh axis (axis, ring).
struct Key {
  bool peer = false;
  std::string axis;   // !peer: the collective's axis; peer with ring != 0: the ring's axis
  int64_t stage = 0;  // peer: pipeline stage
  int64_t ring = 0;   // peer: offset in the ring, 0 = a pipeline peer
  bool operator==(const Key& o) const {
    return peer == o.peer && axis == o.axis && stage == o.stage && ring == o.ring;
  }
};

int64_t key_value(const RankLayout& layout, const Key& key, int64_t rank) {
  if (!key.peer) return layout.group_id(rank, key.axis);
  if (key.ring == 0) return layout.with_coord(rank, "pp", key.stage);
  const int64_t deg = layout.degree(key.axis);
  return layout.with_coord(rank, key.axis, (layout.coord(rank, key.axis) + key.ring + deg) % deg);
}

struct RoleEncoding {
  TraceTemplate tmpl;
  RoleProgram skeleton;           // hole nodes only: names and deps dropped
  bool direct = false;            // every hole's value is one of `keys`
  std::vector<Key> keys;          // distinct per-rank values (direct)
  std::vector<uint32_t> hole_key; // per hole: index into keys (direct)
};

struct RankEncoderImpl {
  const GeneratorState* state = nullptr;  // owned by the Generator (stable across moves)
  std::vector<RoleEncoding> roles;
  TraceMetadata meta;
  int64_t world = 0;
  bool fast = true;

  Status fill_holes(size_t role, int64_t rank, RankEncoder::Scratch* s) const {
    const RoleEncoding& re = roles[role];
    if (!re.direct) {
      RankTrace t = instantiate_rank(re.skeleton, state->layout, rank);
      if (t.nodes.size() != re.tmpl.hole_nodes().size())
        return make_error(ErrorCode::kInternal, "skeleton instantiation changed the node count");
      s->holes = std::move(t.nodes);
      s->role = -1;
      return ok_status();
    }
    if (s->role != static_cast<int64_t>(role) || s->owner != this) {
      s->holes.clear();  // kinds, tags, sizes; group/peer set below
      for (const ProgramNode& x : re.skeleton.nodes) s->holes.push_back(x.to_trace_node());
      s->role = static_cast<int64_t>(role);
      s->owner = this;
    }
    s->values.resize(re.keys.size());
    for (size_t k = 0; k < re.keys.size(); ++k) {
      const Key& key = re.keys[k];
      s->values[k] = key_value(state->layout, key, rank);
    }
    for (size_t i = 0; i < s->holes.size(); ++i) {
      TraceNode& n = s->holes[i];
      const int64_t v = s->values[re.hole_key[i]];
      if (n.kind == TraceNodeKind::kCollective) {
        n.group = v;
      } else {
        n.peer = static_cast<int32_t>(v);
      }
    }
    return ok_status();
  }

  Result<std::string_view> encode_fast(int64_t rank, RankEncoder::Scratch* s) const {
    const size_t role = role_of(*state, rank);
    const RoleEncoding& re = roles[role];
    SC_RETURN_IF_ERROR(fill_holes(role, rank, s));
    if (s->buf.size() < re.tmpl.max_size()) s->buf.resize(re.tmpl.max_size());
    SC_ASSIGN_OR_RETURN(size_t n, re.tmpl.encode(rank, s->holes.data(), s->holes.size(), s->buf.data()));
    return std::string_view(s->buf.data(), n);
  }

  Result<std::string_view> encode_reference(int64_t rank, RankEncoder::Scratch* s) const {
    RankTrace t = instantiate_rank(*role_programs(*state)[role_of(*state, rank)], state->layout, rank);
    std::string bytes;
    SC_RETURN_IF_ERROR(write_chakra_trace(t, meta, &bytes));
    s->buf.assign(bytes.begin(), bytes.end());
    return std::string_view(s->buf.data(), s->buf.size());
  }
};

RankEncoder::RankEncoder(std::unique_ptr<RankEncoderImpl> impl) : impl_(std::move(impl)) {}
RankEncoder::RankEncoder(RankEncoder&&) noexcept = default;
RankEncoder& RankEncoder::operator=(RankEncoder&&) noexcept = default;
RankEncoder::~RankEncoder() = default;

Result<RankEncoder> RankEncoder::create(const Generator& g) {
  auto impl = std::make_unique<RankEncoderImpl>();
  const GeneratorState& s = GeneratorAccess::state(g);
  impl->state = &s;
  impl->meta = g.metadata();
  impl->world = g.world_size();
  std::vector<const RoleProgram*> programs = role_programs(s);
  for (size_t role = 0; role < programs.size(); ++role) {
    const RoleProgram& p = *programs[role];
    const int64_t sample_rank = first_rank_of_role(s, role, impl->world);
    if (sample_rank < 0) return make_error(ErrorCode::kInternal, "role " + std::to_string(role) + " has no rank");
    RankTrace sample = instantiate_rank(p, s.layout, sample_rank);
    RoleEncoding re;
    SC_ASSIGN_OR_RETURN(re.tmpl, TraceTemplate::create(sample, impl->meta));
    const std::vector<uint32_t>& hn = re.tmpl.hole_nodes();
    // Collectives take the group of their mesh axis, sends/receives the rank
    // of their peer stage: exactly instantiate_rank's substitution, computed
    // once per distinct key per rank. A role whose program lacks these
    // tables falls back to instantiate_rank on the skeleton.
    re.direct = true;
    for (uint32_t i : hn) {
      ProgramNode n = p.nodes[i];
      n.name.clear();
      n.deps.clear();
      re.skeleton.nodes.push_back(std::move(n));
      if (i < p.node_axis.size()) re.skeleton.node_axis.push_back(re.skeleton.axis_id(p.axis_of(i)));
      if (i < p.peer_stage.size()) re.skeleton.peer_stage.push_back(p.peer_stage[i]);
      const int64_t ring = i < p.ring_offset.size() ? p.ring_offset[i] : 0;
      re.skeleton.ring_offset.push_back(static_cast<int8_t>(ring));
      Key key;
      if (p.nodes[i].kind == TraceNodeKind::kCollective && i < p.node_axis.size() && !p.axis_of(i).empty()) {
        key.axis = p.axis_of(i);
      } else if (p.nodes[i].kind != TraceNodeKind::kCollective && ring != 0) {
        key.peer = true;
        key.axis = p.axis_of(i);
        key.ring = ring;
      } else if (p.nodes[i].kind != TraceNodeKind::kCollective && i < p.peer_stage.size() && p.peer_stage[i] >= 0) {
        key.peer = true;
        key.stage = p.peer_stage[i];
      } else {
        re.direct = false;
        continue;
      }
      auto it = std::find(re.keys.begin(), re.keys.end(), key);
      if (it == re.keys.end()) it = re.keys.insert(re.keys.end(), key);
      re.hole_key.push_back(static_cast<uint32_t>(it - re.keys.begin()));
    }
    impl->roles.push_back(std::move(re));
  }

  // Self-check: the first, last and a middle rank of every role against the
  // reference writer.
  std::vector<int64_t> check = {0, impl->world - 1, impl->world / 2};
  for (size_t role = 0; role < programs.size(); ++role) check.push_back(first_rank_of_role(s, role, impl->world));
  Scratch scratch;
  for (int64_t r : check) {
    Result<std::string> ref = g.rank_trace_bytes(r);
    if (!ref.ok()) return ref.error();
    Result<std::string_view> fast = impl->encode_fast(r, &scratch);
    if (!fast.ok() || *fast != std::string_view(*ref)) {
      impl->fast = false;
      break;
    }
  }
  return RankEncoder(std::move(impl));
}

Result<std::string_view> RankEncoder::encode(int64_t rank, Scratch* scratch) const {
  if (rank < 0 || rank >= impl_->world)
    return make_error(ErrorCode::kInvalidArgument,
                      "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(impl_->world - 1), "rank");
  return impl_->fast ? impl_->encode_fast(rank, scratch) : impl_->encode_reference(rank, scratch);
}

int64_t RankEncoder::world_size() const { return impl_->world; }
size_t RankEncoder::num_roles() const { return impl_->roles.size(); }
bool RankEncoder::fast() const { return impl_->fast; }

// ------------------------------------------------------------------ the archive

int64_t RankSelection::count() const {
  int64_t n = 0;
  for (const auto& [lo, hi] : ranges) n += hi - lo + 1;
  return n;
}

RankSelection all_ranks(int64_t world) {
  RankSelection s;
  if (world > 0) s.ranges.push_back({0, world - 1});
  return s;
}

std::string selection_text(const RankSelection& s) {
  std::string t;
  for (const auto& [lo, hi] : s.ranges) {
    if (!t.empty()) t += ',';
    t += std::to_string(lo);
    if (hi != lo) {
      t += '-';
      t += std::to_string(hi);
    }
  }
  return t;
}

bool valid_trace_prefix(const std::string& p) {
  if (p.empty() || p == "." || p == ".." || p.size() > kMaxTracePrefix) return false;
  for (char c : p) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string trace_name(const std::string& prefix, int64_t rank) { return prefix + "." + std::to_string(rank) + ".et"; }

std::vector<std::string> archive_parts(const Generator& g) {
  std::vector<std::string> out = g.phase_names();
  if (!out.empty() && g.phase("mixed") == nullptr) out.push_back("kv_transfer");
  return out;
}

int64_t archive_world_size(const Job& job) {
  if (!job.inference()) return job.parallel.world_size();
  const int64_t wp = serving_pool_job(job, true).parallel.world_size();
  const int64_t wd = serving_pool_job(job, false).parallel.world_size();
  return job.serving.disaggregated ? wp + wd : std::max(wp, wd);
}

int64_t archive_world_size(const Generator& g) {
  const std::vector<std::string> parts = archive_parts(g);
  if (parts.empty()) return g.world_size();
  int64_t w = 0;
  for (const std::string& p : parts) {
    const Generator* pg = g.phase(p);
    w = std::max(w, pg ? pg->world_size() : g.phase("prefill")->world_size() + g.world_size());
  }
  return w;
}

namespace {

// One folder of the archive: a training job's whole export (name "",
// no folder) or an inference job's part.
struct Part {
  std::string name;               // "" for training
  std::string dir;                // prefix of its members' names: "" or "prefill/"
  const Generator* gen = nullptr; // null for kv_transfer
  int64_t world = 0;
  RankSelection ranks;            // the selection below world
};

RankSelection clip(const RankSelection& s, int64_t world) {
  RankSelection out;
  for (const auto& [lo, hi] : s.ranges)
    if (lo < world) out.ranges.push_back({lo, std::min(hi, world - 1)});
  return out;
}

bool inference(const Generator& g) { return !g.phase_names().empty(); }

Status check_spec(const Generator& g, const ArchiveSpec& spec) {
  if (!valid_trace_prefix(spec.prefix))
    return make_error(ErrorCode::kInvalidArgument,
                      "must be a file name of letters, digits, '.', '_' or '-', other than '.' and '..', of at most " +
                          std::to_string(kMaxTracePrefix) + " characters (got " + json_quote(echo_text(spec.prefix)) + ")",
                      "prefix");
  const std::vector<std::string> parts = archive_parts(g);
  if (!spec.part.empty() && std::find(parts.begin(), parts.end(), spec.part) == parts.end()) {
    if (parts.empty())
      return make_error(ErrorCode::kInvalidArgument, "phase is for inference jobs (\"mode\": \"inference\")", "phase");
    std::string known;
    for (const auto& n : parts) known += (known.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::kInvalidArgument, "must be one of " + known, "phase");
  }
  const int64_t world = archive_world_size(g);
  int64_t prev = -1;
  for (const auto& [lo, hi] : spec.ranks.ranges) {
    if (lo <= prev || hi < lo || hi >= world)
      return make_error(ErrorCode::kInvalidArgument,
                        "rank ranges must be ascending, disjoint and inside 0.." + std::to_string(world - 1) +
                            " (got " + selection_text(spec.ranks) + ")",
                        "ranks");
    prev = hi;
  }
  return ok_status();
}

// The parts the spec selects, in archive order.
std::vector<Part> parts_of(const Generator& g, const ArchiveSpec& spec) {
  std::vector<Part> out;
  const std::vector<std::string> names = archive_parts(g);
  if (names.empty()) {
    out.push_back({"", "", &g, g.world_size(), spec.ranks});
    return out;
  }
  for (const std::string& n : names) {
    if (!spec.part.empty() && n != spec.part) continue;
    Part p;
    p.name = n;
    p.dir = spec.part.empty() ? n + "/" : "";
    p.gen = g.phase(n);
    p.world = p.gen ? p.gen->world_size() : g.phase("prefill")->world_size() + g.world_size();
    p.ranks = clip(spec.ranks, p.world);
    out.push_back(std::move(p));
  }
  return out;
}

ArchiveEntry file_entry(std::string name, std::string bytes, int mode = 0644) {
  ArchiveEntry e;
  e.kind = ArchiveEntry::Kind::kFile;
  e.name = std::move(name);
  e.bytes = std::move(bytes);
  e.mode = mode;
  return e;
}

ArchiveEntry trace_entry(const Part& p, const std::string& prefix, int64_t rank) {
  ArchiveEntry e;
  e.kind = ArchiveEntry::Kind::kTrace;
  e.name = p.dir + trace_name(prefix, rank);
  e.rank = rank;
  e.part = p.name;
  return e;
}

ArchiveEntry manifest_entry(std::string name, std::string part) {
  ArchiveEntry m;
  m.kind = ArchiveEntry::Kind::kManifest;
  m.name = std::move(name);
  m.part = std::move(part);
  return m;
}

// A part's members that are not traces, in archive order: those before
// its traces and those after them.
void other_entries(const Generator& g, const ArchiveSpec& spec, const Part& p, std::vector<ArchiveEntry>* before,
                   std::vector<ArchiveEntry>* after) {
  std::string groups = p.gen ? p.gen->groups_json() : group_table_json(GroupTable{});
  std::vector<ArchiveEntry> files;
  files.push_back(file_entry(p.dir + "comm_groups.json", std::move(groups)));
  if (p.gen) files.push_back(file_entry(p.dir + "summary.json", p.gen->summary_json()));
  if (spec.layout == ArchiveLayout::kFiles) {
    for (ArchiveEntry& e : files) after->push_back(std::move(e));
    return;
  }
  for (ArchiveEntry& e : files) before->push_back(std::move(e));
  const bool partial = !p.ranks.all(p.world);
  for (AstraSimFile& f : astra_sim_inputs(g.job().hardware, p.world, spec.prefix, partial))
    before->push_back(file_entry(p.dir + std::move(f.name), std::move(f.text), f.mode));
  after->push_back(manifest_entry(p.dir + "manifest.json", p.name));
}

// The top level of an inference job's whole archive: its summary.json (and
// a bundle's manifest.json over every member).
void top_entries(const Generator& g, const ArchiveSpec& spec, std::vector<ArchiveEntry>* out) {
  if (!inference(g) || !spec.part.empty()) return;
  out->push_back(file_entry("summary.json", g.summary_json()));
  if (spec.layout == ArchiveLayout::kBundle) out->push_back(manifest_entry("manifest.json", ""));
}

bool selected(const RankSelection& s, int64_t rank) {
  for (const auto& [lo, hi] : s.ranges)
    if (rank >= lo && rank <= hi) return true;
  return false;
}

std::string ranks_text(const RankSelection& s, int64_t world) {
  if (s.all(world)) return "all";
  return s.ranges.empty() ? "none" : selection_text(s);
}

const Job& full_job(const Generator& g) {
  const GeneratorState& s = GeneratorAccess::state(g);
  return s.serving_job ? *s.serving_job : g.job();
}

}  // namespace

Result<std::vector<ArchiveEntry>> archive_entries(const Generator& g, const ArchiveSpec& spec) {
  SC_RETURN_IF_ERROR(check_spec(g, spec));
  std::vector<ArchiveEntry> out;
  for (const Part& p : parts_of(g, spec)) {
    std::vector<ArchiveEntry> after;
    other_entries(g, spec, p, &out, &after);
    out.reserve(out.size() + static_cast<size_t>(p.ranks.count()) + after.size());
    for (const auto& [lo, hi] : p.ranks.ranges)
      for (int64_t r = lo; r <= hi; ++r) out.push_back(trace_entry(p, spec.prefix, r));
    for (ArchiveEntry& e : after) out.push_back(std::move(e));
  }
  top_entries(g, spec, &out);
  return out;
}

Result<ArchiveEntry> find_archive_entry(const Generator& g, const ArchiveSpec& spec, const std::string& name) {
  SC_RETURN_IF_ERROR(check_spec(g, spec));
  std::vector<ArchiveEntry> others;
  for (const Part& p : parts_of(g, spec)) {
    if (name.compare(0, p.dir.size(), p.dir) != 0) continue;
    // <dir><prefix>.<rank>.et: the rank in canonical decimal (no sign, no leading zero).
    const std::string head = p.dir + spec.prefix + ".";
    if (name.size() > head.size() + 3 && name.compare(0, head.size(), head) == 0 &&
        name.compare(name.size() - 3, 3, ".et") == 0) {
      const std::string digits = name.substr(head.size(), name.size() - head.size() - 3);
      bool ok = !digits.empty() && digits.size() <= 18 && (digits == "0" || digits[0] != '0');
      int64_t rank = 0;
      for (char c : digits) {
        ok = ok && c >= '0' && c <= '9';
        if (ok) rank = rank * 10 + (c - '0');
      }
      if (ok && selected(p.ranks, rank)) return trace_entry(p, spec.prefix, rank);
    }
    other_entries(g, spec, p, &others, &others);
  }
  top_entries(g, spec, &others);
  for (ArchiveEntry& e : others)
    if (e.name == name) return std::move(e);
  return make_error(ErrorCode::kInvalidArgument,
                    "no member " + json_quote(name) + " in this archive (archive_manifest lists them)", "name");
}

std::string archive_manifest_json(const Generator& g, const ArchiveSpec& spec, const ArchiveEntry& entry,
                                  const std::vector<ArchiveMember>& before) {
  std::vector<ArchiveMember> members;
  std::string head;
  if (!inference(g)) {  // a training job: unchanged since the first manifest
    const bool partial = !spec.ranks.all(g.world_size());
    members = before;
    head = ",\n  \"world_size\": " + std::to_string(g.world_size()) +
           ",\n  \"ranks\": " + json_quote(partial ? selection_text(spec.ranks) : "all") +
           ",\n  \"trace_prefix\": " + json_quote(spec.prefix);
  } else if (!entry.part.empty()) {  // one part's folder
    const std::vector<Part> parts = parts_of(g, spec);
    auto p = std::find_if(parts.begin(), parts.end(), [&](const Part& x) { return x.name == entry.part; });
    const Part part = p == parts.end() ? Part{} : *p;
    for (const ArchiveMember& m : before)
      if (m.name.compare(0, part.dir.size(), part.dir) == 0 && m.name != entry.name)
        members.push_back({m.name.substr(part.dir.size()), m.bytes, m.sha256});
    head = ",\n  \"inference_iteration\": " + json_quote(part.name) +
           ",\n  \"world_size\": " + std::to_string(part.world) +
           ",\n  \"ranks\": " + json_quote(ranks_text(part.ranks, part.world)) +
           ",\n  \"trace_prefix\": " + json_quote(spec.prefix);
  } else {  // the whole archive of an inference job
    members = before;
    std::string parts;
    bool all = true;
    for (const Part& p : parts_of(g, spec)) {
      all = all && p.ranks.all(p.world);
      parts += std::string(parts.empty() ? "" : ", ") + "{\"name\": " + json_quote(p.name) +
               ", \"world_size\": " + std::to_string(p.world) + "}";
    }
    head = ",\n  \"inference_iterations\": [" + parts + "]" +
           ",\n  \"ranks\": " + json_quote(all ? "all" : selection_text(spec.ranks)) +
           ",\n  \"trace_prefix\": " + json_quote(spec.prefix);
  }
  std::string m = "{\n  \"generator\": \"stagecraft\",\n  \"generator_version\": " + json_quote(stagecraft_version()) +
                  ",\n  \"config_hash\": " + json_quote(g.metadata().config_hash) + head +
                  ",\n  \"job\": " + job_to_canonical_json(full_job(g)) + ",\n  \"files\": [\n";
  for (size_t i = 0; i < members.size(); ++i)
    m += "    {\"name\": " + json_quote(members[i].name) + ", \"bytes\": " + std::to_string(members[i].bytes) +
         ", \"sha256\": " + json_quote(members[i].sha256) + "}" + (i + 1 == members.size() ? "\n" : ",\n");
  m += "  ]\n}\n";
  return m;
}

ArchiveEncoder::ArchiveEncoder(const RankEncoder& training) { parts_.push_back({"", &training}); }
ArchiveEncoder::ArchiveEncoder(ArchiveEncoder&&) noexcept = default;
ArchiveEncoder& ArchiveEncoder::operator=(ArchiveEncoder&&) noexcept = default;
ArchiveEncoder::~ArchiveEncoder() = default;

Result<ArchiveEncoder> ArchiveEncoder::create(const Generator& g) {
  ArchiveEncoder out;
  std::vector<std::string> parts = archive_parts(g);
  if (parts.empty()) parts.push_back("");
  for (const std::string& name : parts) {
    if (name == "kv_transfer") {
      SC_ASSIGN_OR_RETURN(KvTransfer kv, kv_transfer_traces(g));
      for (const RankTrace& t : kv.ranks) {
        std::string bytes;
        SC_RETURN_IF_ERROR(write_chakra_trace(t, kv.meta, &bytes));
        out.kv_.push_back(std::move(bytes));
      }
      continue;
    }
    SC_ASSIGN_OR_RETURN(RankEncoder enc, RankEncoder::create(name.empty() ? g : *g.phase(name)));
    out.owned_.push_back(std::make_unique<RankEncoder>(std::move(enc)));
    out.parts_.push_back({name, out.owned_.back().get()});
  }
  return out;
}

Result<std::string_view> ArchiveEncoder::encode(const ArchiveEntry& e, RankEncoder::Scratch* scratch) const {
  if (e.part == "kv_transfer") {
    if (e.rank < 0 || e.rank >= static_cast<int64_t>(kv_.size()))
      return make_error(ErrorCode::kInvalidArgument, "rank " + std::to_string(e.rank) + " is outside the KV transfer",
                        "rank");
    return std::string_view(kv_[static_cast<size_t>(e.rank)]);
  }
  for (const auto& [name, enc] : parts_)
    if (name == e.part) return enc->encode(e.rank, scratch);
  return make_error(ErrorCode::kInvalidArgument, "no part " + json_quote(e.part) + " in this archive", "phase");
}

Result<std::string> archive_entry_bytes(const Generator& g, const ArchiveSpec& spec, const ArchiveEntry& entry) {
  switch (entry.kind) {
    case ArchiveEntry::Kind::kFile:
      return entry.bytes;
    case ArchiveEntry::Kind::kTrace: {
      if (entry.part.empty()) return g.rank_trace_bytes(entry.rank);
      if (const Generator* pg = g.phase(entry.part)) return pg->rank_trace_bytes(entry.rank);
      SC_ASSIGN_OR_RETURN(KvTransfer kv, kv_transfer_traces(g));
      if (entry.rank < 0 || entry.rank >= static_cast<int64_t>(kv.ranks.size()))
        return make_error(ErrorCode::kInvalidArgument, "rank outside the KV transfer", "rank");
      std::string bytes;
      SC_RETURN_IF_ERROR(write_chakra_trace(kv.ranks[static_cast<size_t>(entry.rank)], kv.meta, &bytes));
      return bytes;
    }
    case ArchiveEntry::Kind::kManifest:
      break;
  }
  SC_ASSIGN_OR_RETURN(std::vector<ArchiveEntry> entries, archive_entries(g, spec));
  SC_ASSIGN_OR_RETURN(ArchiveEncoder enc, ArchiveEncoder::create(g));
  RankEncoder::Scratch scratch;
  std::vector<ArchiveMember> members;
  for (const ArchiveEntry& e : entries) {
    if (e.name == entry.name) break;
    if (e.kind == ArchiveEntry::Kind::kFile) {
      members.push_back({e.name, e.bytes.size(), sha256_hex(e.bytes)});
    } else if (e.kind == ArchiveEntry::Kind::kTrace) {
      SC_ASSIGN_OR_RETURN(std::string_view b, enc.encode(e, &scratch));
      members.push_back({e.name, b.size(), sha256_hex(b)});
    } else {
      const std::string m = archive_manifest_json(g, spec, e, members);
      members.push_back({e.name, m.size(), sha256_hex(m)});
    }
  }
  return archive_manifest_json(g, spec, entry, members);
}

}  // namespace sc
