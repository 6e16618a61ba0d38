#include <doctest/doctest.h>

#include <string>

#include "emit/chakra_writer.h"
#include "chakra_test_util.h"

namespace sc {
namespace {

using test::Wire;

std::string expected_metadata(int64_t rank, int64_t world_size) {
  Wire m;
  m.len(1, "0.0.4")
      .len(2, test::attr_str("generator", "stagecraft"))
      .len(2, test::attr_str("generator_version", "0.1.0"))
      .len(2, test::attr_str("config_hash", "abc123"))
      .len(2, test::attr_num("rank", test::kInt64Val, static_cast<uint64_t>(rank)))
      .len(2, test::attr_num("world_size", test::kInt64Val, static_cast<uint64_t>(world_size)));
  return m.b;
}

std::string is_cpu_op_false() { return test::attr_num("is_cpu_op", test::kBoolVal, 0); }

// attr { name: <name>, string_list (30) { values (1): ... } }
std::string attr_list(const std::string& name, const std::vector<std::string>& values) {
  Wire list;
  for (const auto& v : values) list.len(1, v);
  return Wire{}.len(1, name).len(30, list.b).b;
}
// The memory-tracking attributes of a node (after is_cpu_op).
std::string memory(const std::vector<std::string>& in = {}, const std::vector<std::string>& out = {}) {
  return Wire{}.len(10, attr_list("inputs", in)).len(10, attr_list("outputs", out)).b;
}

std::string write_ok(const RankTrace& t, const TraceMetadata& meta) {
  std::string out;
  Status st = write_chakra_trace(t, meta, &out);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().to_string()));
  return out;
}

TEST_CASE("chakra emit: compute node bytes match a hand encoding") {
  RankTrace t;
  t.rank = 2;
  t.nodes.push_back(test::compute(3, "mm", {}, 1000, 300, 5));
  const std::string out = write_ok(t, test::test_meta());

  // Node{id=3, name="mm", type=COMP_NODE, duration_micros=5, attr=[
  //   is_cpu_op: bool_val false, inputs: string_list [], outputs:
  //   string_list [], num_ops: int64_val 1000, tensor_size: uint64_val
  //   300]}, written out byte by byte.
  const unsigned char node[] = {
      0x55,                                      // frame length 85
      0x08, 0x03,                                // 1: id = 3
      0x12, 0x02, 'm',  'm',                     // 2: name
      0x18, 0x04,                                // 3: type = COMP_NODE
      0x38, 0x05,                                // 7: duration_micros = 5
      0x52, 0x0e, 0x0a, 0x09, 'i', 's', '_', 'c', 'p', 'u', '_', 'o', 'p',
      0xd8, 0x01, 0x00,                          // 27: bool_val = false
      0x52, 0x0b, 0x0a, 0x06, 'i', 'n', 'p', 'u', 't', 's',
      0xf2, 0x01, 0x00,                          // 30: string_list = {}
      0x52, 0x0c, 0x0a, 0x07, 'o', 'u', 't', 'p', 'u', 't', 's',
      0xf2, 0x01, 0x00,                          // 30: string_list = {}
      0x52, 0x0c, 0x0a, 0x07, 'n', 'u', 'm', '_', 'o', 'p', 's',
      0x48, 0xe8, 0x07,                          // 9: int64_val = 1000
      0x52, 0x10, 0x0a, 0x0b, 't', 'e', 'n', 's', 'o', 'r', '_', 's', 'i', 'z', 'e',
      0x68, 0xac, 0x02,                          // 13: uint64_val = 300
  };
  const std::string meta = Wire{}.frame(expected_metadata(2, 4)).b;
  CHECK(out == meta + std::string(reinterpret_cast<const char*>(node), sizeof node));
}

TEST_CASE("chakra emit: every node kind matches the wire encoding") {
  const RankTrace t = test::sample_trace();
  const std::string out = write_ok(t, test::test_meta());

  Wire w;
  w.frame(expected_metadata(1, 4));
  const std::string cpu = is_cpu_op_false();
  auto num = [](const char* n, int kind, uint64_t v) { return test::attr_num(n, kind, v); };
  // id 0 is not written (proto3 default); name and type always are.
  w.frame(Wire{}.len(2, "fwd.qkv").num(3, 4).num(7, 5)
              .len(10, cpu).append(memory()).len(10, num("num_ops", test::kInt64Val, 1000))
              .len(10, num("tensor_size", test::kUint64Val, 300)).b);
  w.frame(Wire{}.num(1, 1).len(2, "fwd.ar").num(3, 7).packed(5, {0})
              .len(10, cpu).append(memory()).len(10, num("comm_type", test::kInt64Val, 0))
              .len(10, num("comm_size", test::kInt64Val, 1 << 20))
              .len(10, test::attr_str("pg_name", "1")).b);
  w.frame(Wire{}.num(1, 2).len(2, "pp.send").num(3, 5).packed(5, {1})
              .len(10, cpu).append(memory()).len(10, num("comm_dst", test::kInt32Val, 3))
              .len(10, num("comm_tag", test::kInt32Val, 7))
              .len(10, num("comm_size", test::kInt64Val, 4096)).b);
  w.frame(Wire{}.num(1, 3).len(2, "pp.recv").num(3, 6)
              .len(10, cpu).append(memory()).len(10, num("comm_src", test::kInt32Val, 0))
              .len(10, num("comm_tag", test::kInt32Val, 8))
              .len(10, num("comm_size", test::kInt64Val, 4096)).b);
  w.frame(Wire{}.num(1, 4).len(2, "bwd.rs").num(3, 7).packed(5, {2, 3})
              .len(10, cpu).append(memory()).len(10, num("comm_type", test::kInt64Val, 7))
              .len(10, num("comm_size", test::kInt64Val, 2048))
              .len(10, test::attr_str("pg_name", "2")).b);
  // duration 0 and num_ops 0 are proto3 defaults outside / inside a oneof:
  // the field is omitted, the attribute value is still written.
  w.frame(Wire{}.num(1, 5).len(2, "bwd.mlp").num(3, 4).packed(5, {3, 4})
              .len(10, cpu).append(memory()).len(10, num("num_ops", test::kInt64Val, 0))
              .len(10, num("tensor_size", test::kUint64Val, 1)).b);
  CHECK(out == w.b);
}

TEST_CASE("chakra emit: memory-tracking inputs and outputs name each node's output tensor") {
  RankTrace t;
  t.rank = 0;
  t.nodes.push_back(test::compute(0, "a", {}, 10, 300, 1));
  t.nodes.back().output_bytes = 200;
  t.nodes.push_back(test::compute(1, "b", {}, 10, 300, 1));  // writes nothing
  t.nodes.push_back(test::compute(2, "c", {0, 1}, 10, 300, 1));
  t.nodes.back().output_bytes = 64;
  const std::string out = write_ok(t, test::test_meta());
  Wire w;
  w.frame(expected_metadata(0, 4));
  auto num = [](const char* n, int kind, uint64_t v) { return test::attr_num(n, kind, v); };
  auto comp = [&](uint64_t id, const char* name, std::vector<uint64_t> deps, const std::string& mem) {
    Wire n;
    if (id) n.num(1, id);
    n.len(2, name).num(3, 4);
    if (!deps.empty()) n.packed(5, deps);
    n.num(7, 1).len(10, is_cpu_op_false()).append(mem);
    return n.len(10, num("num_ops", test::kInt64Val, 10)).len(10, num("tensor_size", test::kUint64Val, 300)).b;
  };
  w.frame(comp(0, "a", {}, memory({}, {"t0", "200"})));
  w.frame(comp(1, "b", {}, memory()));
  // Only the dependency that writes a tensor is an input.
  w.frame(comp(2, "c", {0, 1}, memory({"t0", "200"}, {"t2", "64"})));
  CHECK(out == w.b);
  // The reader takes the output size back.
  auto back = read_chakra_trace(out);
  REQUIRE(back.ok());
  CHECK(back->trace.nodes[0].output_bytes == 200);
  CHECK(back->trace.nodes[1].output_bytes == 0);
  CHECK(back->trace.nodes[2].output_bytes == 64);
  // Lists that are not name/size pairs are rejected, naming the attribute.
  for (const auto& bad : {memory({"t0"}, {}), memory({}, {"t0", "12x"})}) {
    Wire b;
    b.frame(expected_metadata(0, 4));
    b.frame(comp(0, "a", {}, bad));
    auto r = read_chakra_trace(b.b);
    REQUIRE(!r.ok());
    CHECK(r.error().message.find("attribute") != std::string::npos);
    CHECK((r.error().message.find("inputs") != std::string::npos || r.error().message.find("outputs") != std::string::npos));
  }
}

TEST_CASE("chakra emit: output is deterministic and appended") {
  const RankTrace t = test::sample_trace();
  const std::string a = write_ok(t, test::test_meta());
  const std::string b = write_ok(t, test::test_meta());
  CHECK(a == b);
  std::string out = "prefix";
  REQUIRE(write_chakra_trace(t, test::test_meta(), &out).ok());
  CHECK(out == "prefix" + a);
}

TEST_CASE("chakra emit: large and out-of-order ids are accepted") {
  RankTrace t;
  t.nodes.push_back(test::compute(1000, "a", {}));
  t.nodes.push_back(test::compute(7, "b", {1000}));
  t.nodes.push_back(test::compute(uint64_t{1} << 40, "c", {7, 1000}));
  t.nodes.push_back(test::compute(9, "d", {uint64_t{1} << 40}));
  std::string out;
  CHECK(write_chakra_trace(t, test::test_meta(), &out).ok());
}

void check_rejected(const RankTrace& t, const char* needle, const TraceMetadata& meta = test::test_meta()) {
  std::string out = "keep";
  Status st = write_chakra_trace(t, meta, &out);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kInternal);
  CHECK_MESSAGE(st.error().message.find(needle) != std::string::npos, st.error().message);
  CHECK(out == "keep");  // nothing appended on error
}

TEST_CASE("chakra emit: broken invariants are internal errors") {
  RankTrace t;
  t.nodes.push_back(test::compute(0, "a", {}));

  RankTrace zero = t;
  zero.nodes.push_back(test::compute(1, "z", {0}, 10, 0));
  check_rejected(zero, "node 1 (z): tensor_size 0");

  RankTrace fwd = t;
  fwd.nodes.push_back(test::compute(1, "f", {2}));
  fwd.nodes.push_back(test::compute(2, "g", {}));
  check_rejected(fwd, "dependency on id 2");

  RankTrace self = t;
  self.nodes.push_back(test::compute(1, "s", {1}));
  check_rejected(self, "dependency on id 1");

  RankTrace dup = t;
  dup.nodes.push_back(test::compute(0, "d", {}));
  check_rejected(dup, "duplicate id");

  RankTrace tag = t;
  tag.nodes.push_back(test::p2p(1, "s", {0}, true, 1, -1, 8));
  check_rejected(tag, "tag -1");

  RankTrace peer = t;
  peer.nodes.push_back(test::p2p(1, "r", {0}, false, -1, 0, 8));
  check_rejected(peer, "peer -1");

  RankTrace far = t;
  far.nodes.push_back(test::p2p(1, "r", {0}, false, 4, 0, 8));
  check_rejected(far, "peer 4 >= world_size 4");

  RankTrace group = t;
  group.nodes.push_back(test::collective(1, "c", {0}, CollectiveType::kAllGather, 8, 0));
  check_rejected(group, "group 0");

  RankTrace bad_coll = t;
  bad_coll.nodes.push_back(test::collective(1, "c", {0}, static_cast<CollectiveType>(1), 8, 1));
  check_rejected(bad_coll, "unsupported collective type 1");

  RankTrace unnamed = t;
  unnamed.nodes.push_back(test::compute(1, "", {0}));
  check_rejected(unnamed, "empty name");

  RankTrace utf8 = t;
  utf8.nodes.push_back(test::compute(1, "bad\xc3(", {0}));
  check_rejected(utf8, "name is not valid UTF-8");
  TraceMetadata bad_meta = test::test_meta();
  bad_meta.config_hash = "\xed\xa0\x80";  // a UTF-16 surrogate
  check_rejected(t, "is not valid UTF-8", bad_meta);

  RankTrace size = t;
  size.nodes.push_back(test::collective(1, "c", {0}, CollectiveType::kAllToAll, -8, 1));
  check_rejected(size, "comm_size -8");

  RankTrace rank = t;
  rank.rank = 4;
  check_rejected(rank, "rank 4 outside world_size 4");
  check_rejected(t, "outside world_size 0", TraceMetadata{});
}

TEST_CASE("chakra emit: group table json") {
  CHECK(group_table_json({}) == "{}");
  CHECK(group_table_json({{2, {2, 3}}, {1, {0, 1}}}) == R"({"1": [0, 1], "2": [2, 3]})");
  CHECK(group_table_json({{10, {5}}, {9, {}}}) == R"({"9": [], "10": [5]})");
}

TEST_CASE("chakra emit: collective names") {
  CHECK(std::string(collective_name(CollectiveType::kAllReduce)) == "all_reduce");
  CHECK(std::string(collective_name(CollectiveType::kAllGather)) == "all_gather");
  CHECK(std::string(collective_name(CollectiveType::kAllToAll)) == "all_to_all");
  CHECK(std::string(collective_name(CollectiveType::kReduceScatter)) == "reduce_scatter");
}

}  // namespace
}  // namespace sc
