#include <doctest/doctest.h>

#include <random>
#include <string>

#include "chakra_test_util.h"
#include "emit/chakra_writer.h"

namespace sc {
namespace {

using test::Wire;

std::string written(const RankTrace& t) {
  std::string out;
  REQUIRE(write_chakra_trace(t, test::test_meta(), &out).ok());
  return out;
}

// A file with our metadata and the given raw node messages.
std::string file_with(std::initializer_list<std::string> nodes) {
  Wire w;
  w.frame(Wire{}.len(1, "0.0.4").len(2, test::attr_num("world_size", test::kInt64Val, 4)).b);
  for (const std::string& n : nodes) w.frame(n);
  return w.b;
}

std::string cpu() { return test::attr_num("is_cpu_op", test::kBoolVal, 0); }

std::string read_error(const std::string& bytes) {
  auto r = read_chakra_trace(bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kParseError);
  return r.error().message;
}

TEST_CASE("chakra read: round trip of every node kind") {
  const RankTrace t = test::sample_trace();
  auto r = read_chakra_trace(written(t));
  REQUIRE(r.ok());
  CHECK(r->version == "0.0.4");
  CHECK(r->rank == 1);
  CHECK(r->trace.rank == 1);
  CHECK(r->meta.generator == "stagecraft");
  CHECK(r->meta.generator_version == "0.1.0");
  CHECK(r->meta.config_hash == "abc123");
  CHECK(r->meta.world_size == 4);
  REQUIRE(r->trace.nodes.size() == t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const TraceNode& a = t.nodes[i];
    const TraceNode& b = r->trace.nodes[i];
    CHECK(a.id == b.id);
    CHECK(a.name == b.name);
    CHECK(a.kind == b.kind);
    CHECK(a.deps == b.deps);
    if (a.kind == TraceNodeKind::kCompute) {
      CHECK(a.num_ops == b.num_ops);
      CHECK(a.tensor_size == b.tensor_size);
      CHECK(a.duration_micros == b.duration_micros);
    } else {
      CHECK(a.comm_size == b.comm_size);
    }
    if (a.kind == TraceNodeKind::kCollective) {
      CHECK(a.coll == b.coll);
      CHECK(a.group == b.group);
    }
    if (a.kind == TraceNodeKind::kSend || a.kind == TraceNodeKind::kRecv) {
      CHECK(a.peer == b.peer);
      CHECK(a.tag == b.tag);
    }
  }
}

TEST_CASE("chakra read: framing errors") {
  CHECK(read_error("").find("empty input") != std::string::npos);
  const std::string good = written(test::sample_trace());
  CHECK(read_error(good + "\x80").find("truncated frame length") != std::string::npos);
  CHECK(read_error(good + "\x05" "ab").find("truncated frame at byte") != std::string::npos);
  CHECK(read_error(good + std::string(1, '\0')).find("empty node record") != std::string::npos);
  CHECK(read_error("\xff\xff\xff\xff\x7f").find("exceeds 2 GiB") != std::string::npos);
  CHECK(read_error("\xff\xff\xff\xff\xff\xff\x01").find("varint too long") != std::string::npos);
  CHECK(read_error(Wire{}.frame(Wire{}.num(1, 3).b).b).find("missing version") != std::string::npos);
  // A proto3 string field that is not UTF-8 fails the parse.
  CHECK(read_error(file_with({Wire{}.num(1, 1).len(2, "\xff").num(3, 4).b})).find("not UTF-8") !=
        std::string::npos);
  CHECK(read_error(file_with({"\x0a\x05\x01"})).find("not a valid Node") != std::string::npos);
}

TEST_CASE("chakra read: wrong attribute kind names node and attribute") {
  const std::string node = Wire{}.num(1, 5).len(2, "ar").num(3, 7).len(10, cpu())
                               .len(10, test::attr_num("comm_type", test::kInt64Val, 0))
                               .len(10, test::attr_str("comm_size", "1024"))
                               .len(10, test::attr_str("pg_name", "1")).b;
  CHECK(read_error(file_with({node})) ==
        "node 5 (ar): attribute comm_size has kind string_val, expected int64_val");

  const std::string tag32 = Wire{}.num(1, 2).len(2, "s").num(3, 5).len(10, cpu())
                                .len(10, test::attr_num("comm_dst", test::kInt64Val, 1))
                                .len(10, test::attr_num("comm_tag", test::kInt32Val, 0))
                                .len(10, test::attr_num("comm_size", test::kInt64Val, 8)).b;
  CHECK(read_error(file_with({tag32})).find("comm_dst has kind int64_val, expected int32_val") !=
        std::string::npos);

  const std::string meta_bad = Wire{}.frame(Wire{}.len(1, "0.0.4").len(2, test::attr_str("rank", "3")).b).b;
  CHECK(read_error(meta_bad).find("global metadata: attribute rank has kind string_val") !=
        std::string::npos);
}

TEST_CASE("chakra read: semantic errors") {
  auto comp = [](uint64_t id, std::vector<uint64_t> deps = {}) {
    return Wire{}.num(1, id).len(2, "c").num(3, 4).packed(5, deps).len(10, cpu())
        .len(10, test::attr_num("num_ops", test::kInt64Val, 1))
        .len(10, test::attr_num("tensor_size", test::kUint64Val, 1)).b;
  };
  CHECK(read_chakra_trace(file_with({comp(0), comp(1, {0})})).ok());
  CHECK(read_error(file_with({comp(0), comp(0)})) == "node 0 (c): duplicate id");
  CHECK(read_error(file_with({comp(0), comp(1, {2})})).find("dependency on id 2") != std::string::npos);
  CHECK(read_error(file_with({Wire{}.num(1, 1).len(2, "m").num(3, 1).len(10, cpu()).b})) ==
        "node 1 (m): unknown node type 1");
  CHECK(read_error(file_with({Wire{}.num(1, 1).num(3, 4).len(10, cpu()).b})) == "node 1: missing name");
  CHECK(read_error(file_with({Wire{}.num(1, 1).len(2, "c").num(3, 4).b})) ==
        "node 1 (c): missing attribute is_cpu_op");
  CHECK(read_error(file_with({Wire{}.num(1, 1).len(2, "c").num(3, 4).len(10, cpu())
                                  .len(10, test::attr_num("num_ops", test::kInt64Val, 1)).b})) ==
        "node 1 (c): missing attribute tensor_size");
  CHECK(read_error(file_with({Wire{}.num(1, 1).len(2, "c").num(3, 4).len(10, cpu())
                                  .len(10, test::attr_num("num_ops", test::kInt64Val, 1))
                                  .len(10, test::attr_num("tensor_size", test::kUint64Val, 0)).b}))
            .find("tensor_size is 0") != std::string::npos);
  CHECK(read_error(file_with({Wire{}.num(1, 1).len(2, "c").num(3, 4).packed(4, {0}).len(10, cpu()).b}))
            .find("ctrl_deps") != std::string::npos);

  auto coll = [](uint64_t type, const std::string& pg) {
    return Wire{}.num(1, 1).len(2, "x").num(3, 7).len(10, cpu())
        .len(10, test::attr_num("comm_type", test::kInt64Val, type))
        .len(10, test::attr_num("comm_size", test::kInt64Val, 8))
        .len(10, test::attr_str("pg_name", pg)).b;
  };
  CHECK(read_chakra_trace(file_with({coll(6, "12")})).ok());
  CHECK(read_error(file_with({coll(1, "1")})).find("comm_type REDUCE(1) is not run") != std::string::npos);
  CHECK(read_error(file_with({coll(0, "0")})).find("pg_name \"0\"") != std::string::npos);
  CHECK(read_error(file_with({coll(0, "")})).find("pg_name \"\"") != std::string::npos);
  CHECK(read_error(file_with({coll(0, "1x")})).find("pg_name") != std::string::npos);

  auto recv = [](uint64_t src, uint64_t tag) {
    return Wire{}.num(1, 1).len(2, "r").num(3, 6).len(10, cpu())
        .len(10, test::attr_num("comm_src", test::kInt32Val, src))
        .len(10, test::attr_num("comm_tag", test::kInt32Val, tag))
        .len(10, test::attr_num("comm_size", test::kInt64Val, 8)).b;
  };
  CHECK(read_chakra_trace(file_with({recv(3, 0)})).ok());
  CHECK(read_error(file_with({recv(4, 0)})).find("comm_src is 4, outside world_size 4") != std::string::npos);
  CHECK(read_error(file_with({recv(0, uint64_t(-1))})).find("comm_tag is -1") != std::string::npos);
}

TEST_CASE("chakra read: garbage and truncated input never crash") {
  const std::string good = written(test::sample_trace());
  // Every strict prefix is an error or (at a frame boundary) a shorter trace.
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = read_chakra_trace(good.substr(0, n));
    if (r.ok()) CHECK(r->trace.nodes.size() < test::sample_trace().nodes.size());
  }
  std::mt19937_64 rng(12345);
  size_t accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    if (iter % 2) bytes.resize(rng() % (bytes.size() + 1));
    accepted += read_chakra_trace(bytes).ok();
    (void)dump_chakra_trace(bytes);
  }
  for (int iter = 0; iter < 5000; ++iter) {
    std::string bytes(rng() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    accepted += read_chakra_trace(bytes).ok();
  }
  MESSAGE("fuzz inputs accepted: " << accepted);
}

}  // namespace
}  // namespace sc
