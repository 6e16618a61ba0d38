// The request layer (core/api/request.h): envelopes, payloads, argument
// checks and the generator cache, against the façade it wraps and the
// protocol in docs/wasm-bridge.md.
#include <cmath>
#include <limits>
#include <string>

#include "../test_jobs.h"
#include "api/budget.h"
#include "api/request.h"
#include "api/state.h"
#include "base/cancel.h"

using namespace sc;
using namespace sc::testing;
using nlohmann::json;

namespace {

// 2 layers, tp 2 x dp 2 x pp 2 = 8 ranks.
const char* kJob =
    R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"tp": 2, "dp": 2, "pp": 2}})";

Response call(RequestHandler& h, const std::string& op, const std::string& job, json args = json::object()) {
  Request r;
  r.op = op;
  r.job_json = job;
  r.args = std::move(args);
  return h.handle(r);
}

json envelope(const Response& r) {
  json j = json::parse(r.envelope, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.envelope);
  return j;
}

// The error a failed response carries, checked against its envelope.
Error error_of(const Response& r) {
  REQUIRE_FALSE(r.ok());
  json j = envelope(r);
  CHECK(j["ok"] == false);
  CHECK(j["error"]["code"] == error_code_name(r.error->code));
  CHECK(j["error"]["message"] == r.error->message);
  CHECK(j["error"]["path"] == r.error->path);
  CHECK(r.body.empty());
  return *r.error;
}

Generator reference() { return make(parse_job(kJob).value()); }

}  // namespace

TEST_CASE("request: every job operation returns the façade's payload in its envelope") {
  RequestHandler h;
  const Generator g = reference();

  Response s = call(h, "summary", kJob);
  REQUIRE(s.ok());
  CHECK(s.body == g.summary_json());
  CHECK(s.envelope == R"({"ok":true,"summary":)" + g.summary_json() + "}");

  Response t = call(h, "graph", kJob);
  REQUIRE(t.ok());
  CHECK(t.body == g.graph_text());
  CHECK(envelope(t)["text"] == g.graph_text());  // escaped text round-trips

  Response gr = call(h, "groups", kJob);
  REQUIRE(gr.ok());
  CHECK(gr.body == g.groups_json());
  CHECK(envelope(gr)["worldSize"] == 8);
  CHECK(envelope(gr)["text"] == g.groups_json());
  CHECK(gr.envelope.rfind(R"({"ok":true,"worldSize":8,"text":")", 0) == 0);

  Response gj = call(h, "graph_json", kJob, {{"stage", 1}});
  REQUIRE(gj.ok());
  CHECK(gj.body == g.graph_json(1).value());
  CHECK(envelope(gj)["graph"]["stage"] == 1);
  CHECK(call(h, "graph_json", kJob).body == g.graph_json(0).value());  // stage defaults to 0

  Response ri = call(h, "rank_info", kJob, {{"rank", 5.0}});
  REQUIRE(ri.ok());
  CHECK(ri.body == g.rank_info_json(5).value());

  Response ra = call(h, "rank_at", kJob, {{"coords", R"({"tp":1,"dp":1,"pp":1})"}});
  REQUIRE(ra.ok());
  CHECK(ra.envelope == R"({"ok":true,"rank":7})");  // 1 + 2*1 + 4*1, Megatron order
  CHECK(call(h, "rank_at", kJob, {{"coords", {{"dp", 1}}}}).envelope == R"({"ok":true,"rank":2})");

  for (int64_t rank : {0, 3, 7}) {
    Response tr = call(h, "rank_trace", kJob, {{"rank", rank}});
    REQUIRE(tr.ok());
    CHECK(tr.body == g.rank_trace_bytes(rank).value());
    CHECK(envelope(tr)["bytes"] == tr.body.size());
  }
}

TEST_CASE("request: version and presets need no job") {
  RequestHandler h;
  Response v = call(h, "version", "");
  REQUIRE(v.ok());
  CHECK(v.body == "0.1.0");
  Response p = call(h, "presets", "");
  REQUIRE(p.ok());
  json list = envelope(p)["presets"];
  REQUIRE(list.size() == preset_names().size());
  for (size_t i = 0; i < list.size(); ++i) CHECK(list[i] == preset_names()[i]);
  CHECK(p.body == list.dump());
}

TEST_CASE("request: ranks must be integers in [0, world): fractions, NaN and huge values are errors") {
  RequestHandler h;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // 1e300 was cast to int64_t before its range was checked (undefined
  // behaviour) in the old bridge; now the range comes first.
  for (const char* op : {"rank_trace", "rank_info"})
    for (json bad : {json(-1), json(8), json(2.5), json(nan), json(inf), json(1e300), json(-1e300), json("3"),
                     json(nullptr)}) {
      CAPTURE(op);
      CAPTURE(bad.dump());
      Error e = error_of(call(h, op, kJob, {{"rank", bad}}));
      CHECK(e.code == ErrorCode::kInvalidArgument);
      CHECK(e.path == "rank");
      // The value as given (NaN and infinity are JSON null).
      CHECK(e.message == "rank must be an integer in [0, 8) (got " + bad.dump() + ")");
    }
  Error missing = error_of(call(h, "rank_trace", kJob));
  CHECK(missing.path == "rank");
  CHECK(missing.message == "rank must be an integer in [0, 8) (not given)");
}

TEST_CASE("request: a fractional stage is rejected here, an integer outside [0, pp) by the façade") {
  RequestHandler h;
  for (json bad : {json(0.5), json(std::numeric_limits<double>::quiet_NaN()), json(1e300), json("1")}) {
    Error e = error_of(call(h, "graph_json", kJob, {{"stage", bad}}));
    CHECK(e.path == "stage");
    CHECK(e.message == "stage must be an integer in [0, 2) (the job's pipeline stages, pp = 2) (got " + bad.dump() + ")");
  }
  Error out = error_of(call(h, "graph_json", kJob, {{"stage", 2}}));
  CHECK(out.path == "stage");
  CHECK(out.message == reference().graph_json(2).error().message);
}

TEST_CASE("request: a bad job is reported before bad arguments; an unknown op names the known ones") {
  RequestHandler h;
  const std::string bad_job = R"({"model": {"preset": "gpt3-1.7b"}, "parallel": {"tp": 7}})";
  Error e = error_of(call(h, "rank_trace", bad_job, {{"rank", -5}}));
  CHECK(e.path.rfind("parallel.tp", 0) == 0);
  Error p = error_of(call(h, "summary", "{not json"));
  CHECK(p.code == ErrorCode::kParseError);
  Error op = error_of(call(h, "explode", kJob));
  CHECK(op.path == "op");
  for (const std::string& name : RequestHandler::ops()) CHECK(op.message.find(name) != std::string::npos);
}

TEST_CASE("request: the cache never changes results; a failing job clears it") {
  RequestHandler h;
  const std::string other = R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"tp": 2}})";
  const std::string first = call(h, "rank_trace", kJob, {{"rank", 6}}).body;
  CHECK(call(h, "rank_trace", kJob, {{"rank", 6}}).body == first);  // cached
  CHECK(call(h, "groups", other).ok());                              // replaced
  CHECK_FALSE(call(h, "summary", "{}").ok());                        // cleared
  CHECK(call(h, "rank_trace", kJob, {{"rank", 6}}).body == first);  // rebuilt
  Request fresh;
  fresh.op = "rank_trace";
  fresh.job_json = kJob;
  fresh.args = {{"rank", 6}};
  CHECK(RequestHandler().handle(fresh).body == first);
}

TEST_CASE("request: a parsed job (the CLI's flags) or a built generator gives the same answer as the JSON text") {
  RequestHandler h;
  Request r;
  r.op = "summary";
  r.job = parse_job(kJob).value();
  Response parsed = h.handle(r);
  REQUIRE(parsed.ok());
  CHECK(parsed.envelope == call(h, "summary", kJob).envelope);
  const Generator g = reference();
  Request built;
  built.op = "rank_trace";
  built.generator = &g;
  built.job_json = "not used";
  built.args = {{"rank", 7}};
  CHECK(h.handle(built).body == g.rank_trace_bytes(7).value());
}

TEST_CASE("request: handle_json takes the job as an object or as text, other keys as arguments") {
  RequestHandler h;
  const Generator g = reference();
  json job = json::parse(kJob);
  Response a = h.handle_json(json{{"op", "rank_trace"}, {"job", job}, {"rank", 4}}.dump());
  REQUIRE(a.ok());
  CHECK(a.body == g.rank_trace_bytes(4).value());
  Response b = h.handle_json(json{{"op", "graph_json"}, {"job", kJob}, {"stage", 1}}.dump());
  REQUIRE(b.ok());
  CHECK(b.body == g.graph_json(1).value());
  CHECK(error_of(h.handle_json("[1,2]")).code == ErrorCode::kParseError);
  CHECK(error_of(h.handle_json(R"({"job": {}})")).path == "op");
}

TEST_CASE("request: a program naming an axis without groups is an internal error, not a crash") {
  // Generator::create checks every lowered program this way before any rank
  // is instantiated (RankLayout would stop on it).
  RankLayout layout({{"tp", 2}, {"dp", 1}, {"pp", 2}});
  RoleProgram prog;
  TraceNode c;
  c.name = "L0.attn.ar";
  c.kind = TraceNodeKind::kCollective;
  prog.nodes = {TraceNode{}, c};
  prog.node_axis = {0, prog.axis_id("tp")};
  prog.peer_stage = {-1, -1};
  CHECK(check_role_program(prog, layout, 2, 0).ok());
  prog.node_axis[1] = prog.axis_id("dp");  // degree 1
  Status s = check_role_program(prog, layout, 2, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == ErrorCode::kInternal);
  CHECK(s.error().message == "pipeline stage 1, node 1 (L0.attn.ar): collective over axis 'dp', which has no "
                             "communicator groups");
  TraceNode send;
  send.name = "send";
  send.kind = TraceNodeKind::kSend;
  prog.nodes[1] = send;
  prog.node_axis[1] = 0;
  prog.peer_stage[1] = 2;
  CHECK(check_role_program(prog, layout, 2, 0).error().message.find("peer stage 2 outside [0, 2)") !=
        std::string::npos);
  prog.peer_stage.pop_back();
  CHECK(check_role_program(prog, layout, 2, 0).error().code == ErrorCode::kInternal);
}

TEST_CASE("request: arguments nest at most 64 levels, as jobs do; deeper text is refused, never built") {
  RequestHandler h;
  // A native caller's argument object 100 levels deep: refused at "args".
  json deep = json::array();
  for (int i = 0; i < 100; ++i) deep = json::array({deep});
  Error e = error_of(call(h, "simulate", kJob, {{"options", deep}}));
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.path == "args");
  // Text 10,000 levels deep where an object's text is taken (options,
  // constraints, coordinates): not JSON within the limits, refused at its
  // path; the handler answers the next request as before.
  const std::string text = std::string(10000, '[') + std::string(10000, ']');
  CHECK(error_of(call(h, "simulate", kJob, {{"options", text}})).path == "options");
  CHECK(error_of(call(h, "rank_at", kJob, {{"coords", text}})).path == "coords");
  Request p;
  p.op = "plan";
  const std::string plan_job =
      R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "training": {"seq_len": 256, "global_batch_size": 8}})";
  p.job_json = plan_job;
  p.args = {{"gpus", 4}, {"constraints", text}};
  CHECK(error_of(h.handle(p)).path == "constraints");
  // A job text that deep (read for its "plan" block): the job's own depth error.
  p.job_json = plan_job.substr(0, plan_job.size() - 1) + R"(, "x": )" + text + "}";
  p.args = {{"gpus", 4}};
  Error deep_job = error_of(h.handle(p));
  CHECK(deep_job.code == ErrorCode::kParseError);
  CHECK(deep_job.message.find("nesting deeper than 64 levels") != std::string::npos);
  CHECK(call(h, "summary", kJob).ok());
}

TEST_CASE("request: encoding traces for an archive is checked against the engine budget before it starts") {
  RequestHandler h;
  REQUIRE(call(h, "summary", kJob).ok());  // built (and cached) under the default budget
  const json est = json::parse(reference().summary_json())["estimate"];
  const int64_t engine = est["engine_bytes"].get<int64_t>(), generate = est["generate_bytes"].get<int64_t>();
  REQUIRE(engine < generate);
  const Budget saved = engine_budget();
  Budget b;
  b.max_engine_bytes = (engine + generate) / 2;  // the build fits, encoding every trace does not
  set_engine_budget(b);
  const json files = {{"layout", "files"}, {"prefix", "trace"}};
  json with_sizes = files;
  with_sizes["sizes"] = true;
  Error e = error_of(call(h, "archive_manifest", kJob, with_sizes));
  CHECK(e.code == ErrorCode::kTooLarge);
  CHECK(e.path == "training.global_batch_size");
  // The list without sizes encodes nothing: still answered.
  CHECK(call(h, "archive_manifest", kJob, files).ok());
  json bundle = {{"layout", "bundle"}, {"prefix", "trace"}, {"name", "manifest.json"}};
  CHECK(error_of(call(h, "archive_entry", kJob, bundle)).code == ErrorCode::kTooLarge);
  bundle["name"] = "summary.json";  // a file as it is: no encoding
  CHECK(call(h, "archive_entry", kJob, bundle).ok());
  set_engine_budget(saved);
  CHECK(call(h, "archive_manifest", kJob, with_sizes).ok());
}

TEST_CASE("request: a callback that fails stops the plan, the request answers its error, the next one runs") {
  RequestHandler h;
  Request p;
  p.op = "plan";
  p.job_json = R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "training": {"seq_len": 256, "global_batch_size": 8}})";
  p.args = {{"gpus", 4}};
  int calls = 0;
  p.progress = [&](int64_t, int64_t, const std::string&) {
    ++calls;
    fail_callback(p, {ErrorCode::kCancelled, "the callback threw: boom", "onProgress"});
  };
  Error e = error_of(h.handle(p));
  CHECK(calls >= 1);
  CHECK(e.code == ErrorCode::kCancelled);
  CHECK(e.path == "onProgress");
  CHECK(e.message == "the callback threw: boom");
  CHECK_FALSE(cancel_requested());  // cleared: the handler's next request is not cancelled
  Request again = p;
  again.progress = nullptr;
  again.callback_failure.reset();
  Response ok = h.handle(again);
  CHECK_MESSAGE(ok.ok(), ok.envelope);
}

TEST_CASE("request: an argument plan or the serving ops do not know is unknown_field at its name") {
  RequestHandler h;
  Request p;
  p.op = "plan";
  p.job_json = R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "training": {"seq_len": 256, "global_batch_size": 8}})";
  p.args = {{"gpus", 4}, {"timelimit", 1}};  // time_limit_seconds misspelt: was ignored (no limit)
  Error e = error_of(h.handle(p));
  CHECK(e.code == ErrorCode::kUnknownField);
  CHECK(e.path == "timelimit");
  CHECK(e.message == "unknown argument (known: gpus, constraints, time_limit_seconds)");
  const std::string serve =
      R"({"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 2}, "serving": {"prompt_tokens": 64, "output_tokens": 8}})";
  e = error_of(call(h, "serving_sweep", serve, {{"concurrency", {1}}, {"conc", {2}}}));
  CHECK(e.code == ErrorCode::kUnknownField);
  CHECK(e.path == "conc");
  e = error_of(call(h, "serving_capacity", serve, {{"request", 5}}));
  CHECK(e.code == ErrorCode::kUnknownField);
  CHECK(e.path == "request");
  CHECK(call(h, "serving_sweep", serve, {{"concurrency", {1}}}).ok());
}
