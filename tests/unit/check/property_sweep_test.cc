// Random-job property sweep (issue 13 item 13, docs/promises.md): with a
// fixed seed, draw jobs over every feature mix (dense / MoE, tp, sp, cp,
// pp, virtual stages, dp, ZeRO 0-3, HSDP, ep, expert tp, schedules,
// recompute, layouts) until 200 are valid; for each, every rank's trace
// goes through the writer and the reader and must:
//  - pass the cross-rank validator (docs/validate.md, R1-R9);
//  - have as many sends as receives for every (src, dst, tag, size),
//    counted here independently of the validator;
//  - never name the rank itself as a send/recv peer;
//  - be the same bytes when the job is built a second time.
// Also the schedule x degree-of-1 sweep of item 7: every schedule with
// each parallel degree at 1 is either refused by job validation or passes
// the same checks.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "api/api.h"
#include "check/validate.h"
#include "emit/chakra_writer.h"
#include "job/job.h"

using namespace sc;

namespace {

uint64_t next(uint64_t* s) {  // xorshift64: the same sequence everywhere
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

template <size_t N>
const char* pick(uint64_t* s, const char* const (&a)[N]) {
  return a[next(s) % N];
}
int64_t pick(uint64_t* s, std::initializer_list<int64_t> v) { return *(v.begin() + next(s) % v.size()); }

// Checks one valid job; returns false (with CHECK failures) when a property fails.
void check_job(const std::string& text, const Job& job) {
  CAPTURE(text);
  Result<Generator> g = Generator::create(job);
  REQUIRE_MESSAGE(g.ok(), g.error().to_string());
  std::vector<DecodedTrace> ranks;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int64_t> balance;  // (src, dst, tag, size) -> sends - recvs
  int64_t self_peers = 0;
  for (int64_t r = 0; r < g->world_size(); ++r) {
    Result<std::string> bytes = g->rank_trace_bytes(r);
    REQUIRE(bytes.ok());
    Result<DecodedTrace> t = read_chakra_trace(*bytes);
    REQUIRE_MESSAGE(t.ok(), t.error().to_string());
    for (const TraceNode& n : t->trace.nodes) {
      if (n.kind != TraceNodeKind::kSend && n.kind != TraceNodeKind::kRecv) continue;
      const bool send = n.kind == TraceNodeKind::kSend;
      if (n.peer == r) ++self_peers;
      balance[{send ? r : n.peer, send ? n.peer : r, n.tag, n.comm_size}] += send ? 1 : -1;
    }
    ranks.push_back(std::move(t).value());
  }
  CHECK(self_peers == 0);
  int64_t unbalanced = 0;
  for (const auto& [key, d] : balance) unbalanced += d != 0;
  CHECK(unbalanced == 0);
  ValidationReport rep = validate_traces(ranks, g->groups(), {});
  CHECK_MESSAGE(rep.ok(), rep.text());
  // Determinism: a second build gives the same bytes (first and last rank,
  // and the group file).
  Result<Generator> again = Generator::create(job);
  REQUIRE(again.ok());
  CHECK(again->rank_trace_bytes(0).value() == g->rank_trace_bytes(0).value());
  CHECK(again->rank_trace_bytes(g->world_size() - 1).value() == g->rank_trace_bytes(g->world_size() - 1).value());
  CHECK(again->groups_json() == g->groups_json());
}

std::string random_job(uint64_t* s) {
  static const char* const kSchedules[] = {"1f1b", "gpipe", "interleaved-1f1b", "zero-bubble"};
  static const char* const kRecompute[] = {"none", "selective", "full"};
  static const char* const kOrders[] = {"megatron", "llama3"};
  const bool moe = next(s) % 3 == 0;
  const int64_t tp = pick(s, {1, 1, 2, 4});
  const int64_t pp = pick(s, {1, 1, 2, 3});
  const int64_t dp = pick(s, {1, 2, 2, 4});
  const int64_t cp = pick(s, {1, 1, 1, 2});
  const int64_t v = pick(s, {1, 1, 2});
  const int64_t mbs = pick(s, {1, 2});
  const int64_t m = pick(s, {1, 2, 3, 4, 6});  // micro-batches per dp rank
  const int64_t zero = pick(s, {0, 0, 1, 2, 3});
  const int64_t layers = pp * v * pick(s, {1, 2});
  std::string j = "{\"model\": {\"preset\": \"" + std::string(moe ? "mixtral-8x7b" : "llama3-8b") +
                  "\", \"num_layers\": " + std::to_string(layers) + "}, \"parallel\": {\"tp\": " + std::to_string(tp) +
                  ", \"pp\": " + std::to_string(pp) + ", \"dp\": " + std::to_string(dp) + ", \"cp\": " +
                  std::to_string(cp) + ", \"virtual_stages\": " + std::to_string(v) + ", \"zero\": " +
                  std::to_string(zero) + ", \"order\": \"" + pick(s, kOrders) + "\"";
  if (tp > 1 && next(s) % 2) j += ", \"sequence_parallel\": true";
  if (moe) {
    const int64_t ep = pick(s, {1, 2, 4});
    j += ", \"ep\": " + std::to_string(ep);
    if (next(s) % 3 == 0) j += ", \"expert_tp\": 1";
  }
  if (zero > 0 && dp * cp >= 4 && next(s) % 2) j += ", \"shard_group\": 2";
  j += "}, \"training\": {\"seq_len\": " + std::to_string(pick(s, {128, 256})) +
       ", \"micro_batch_size\": " + std::to_string(mbs) + ", \"global_batch_size\": " + std::to_string(m * mbs * dp) +
       ", \"schedule\": \"" + (v > 1 ? "interleaved-1f1b" : pick(s, kSchedules)) + "\", \"recompute\": \"" +
       pick(s, kRecompute) + "\"}, \"hardware\": \"" + (next(s) % 2 ? "h100" : "a100") + "\"}";
  return j;
}

}  // namespace

TEST_CASE("property sweep: 200 random valid jobs validate, balance sends and receives, have no self-peers, are deterministic") {
  uint64_t seed = 0x5eed5eed2026ULL;
  int valid = 0, drawn = 0;
  std::map<std::string, int> refused;  // error code -> count, for the log
  while (valid < 200 && drawn < 5000) {
    ++drawn;
    const std::string text = random_job(&seed);
    Result<Job> job = parse_job(text);
    if (!job.ok()) {
      ++refused[error_code_name(job.error().code)];
      continue;
    }
    ++valid;
    check_job(text, *job);
  }
  MESSAGE("drawn " << drawn << ", valid " << valid);
  CHECK(valid == 200);
}

TEST_CASE("property sweep: every schedule with every parallel degree at 1 is refused or sound (issue 13 item 7)") {
  const char* schedules[] = {"1f1b", "gpipe", "interleaved-1f1b", "zero-bubble"};
  const char* degrees[] = {"tp", "pp", "dp", "cp"};
  int built = 0, refused = 0;
  for (const char* sched : schedules) {
    for (const char* one : degrees) {
      for (bool tied : {false, true}) {
        std::map<std::string, int64_t> d = {{"tp", 2}, {"pp", 2}, {"dp", 2}, {"cp", 2}};
        d[one] = 1;
        const bool interleaved = std::string(sched) == "interleaved-1f1b";
        std::string text = std::string("{\"model\": {\"preset\": \"gpt3-1.7b\", \"num_layers\": 4") +
                           (tied ? "" : ", \"tied_embeddings\": false") + "}, \"parallel\": {";
        for (const auto& [k, v] : d) text += "\"" + k + "\": " + std::to_string(v) + ", ";
        text += std::string("\"virtual_stages\": ") + (interleaved ? "2" : "1") +
                "}, \"training\": {\"seq_len\": 128, \"global_batch_size\": " + std::to_string(4 * d["dp"]) +
                ", \"schedule\": \"" + sched + "\"}}";
        CAPTURE(text);
        Result<Job> job = parse_job(text);
        if (!job.ok()) {
          ++refused;
          // The only refusal in this grid is interleaved with pp 1.
          CHECK(interleaved);
          CHECK(d["pp"] == 1);
          CHECK(job.error().path == "parallel.pp");
          continue;
        }
        ++built;
        check_job(text, *job);
      }
    }
  }
  CHECK(refused == 2);  // interleaved x pp 1, tied and untied
  CHECK(built == 30);
}
