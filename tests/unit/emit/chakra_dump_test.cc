#include <doctest/doctest.h>

#include <ctime>
#include <string>

#include "chakra_test_util.h"
#include "emit/chakra_writer.h"

namespace sc {
namespace {

TEST_CASE("chakra dump: canonical text of every node kind") {
  std::string bytes;
  REQUIRE(write_chakra_trace(test::sample_trace(), test::test_meta(), &bytes).ok());
  auto text = dump_chakra_trace(bytes);
  REQUIRE(text.ok());
  CHECK(*text ==
        "# chakra 0.0.4 generator=stagecraft generator_version=0.1.0 rank=1 world_size=4 config_hash=abc123\n"
        "0 fwd.qkv COMP_NODE deps=[] is_cpu_op=false num_ops=1000 tensor_size=300 duration_micros=5\n"
        "1 fwd.ar COMM_COLL_NODE deps=[0] is_cpu_op=false comm_type=ALL_REDUCE(0) comm_size=1048576 pg_name=1\n"
        "2 pp.send COMM_SEND_NODE deps=[1] is_cpu_op=false comm_dst=3 comm_tag=7 comm_size=4096\n"
        "3 pp.recv COMM_RECV_NODE deps=[] is_cpu_op=false comm_src=0 comm_tag=8 comm_size=4096\n"
        "4 bwd.rs COMM_COLL_NODE deps=[2,3] is_cpu_op=false comm_type=REDUCE_SCATTER(7) comm_size=2048 pg_name=2\n"
        "5 bwd.mlp COMP_NODE deps=[3,4] is_cpu_op=false num_ops=0 tensor_size=1 duration_micros=0\n");
}

TEST_CASE("chakra dump: names are escaped so fields split on spaces") {
  RankTrace t;
  t.nodes.push_back(test::compute(0, "a b\\c\n\xc3\xa9", {}));
  TraceMetadata m = test::test_meta(1);
  m.config_hash = "";
  std::string bytes;
  REQUIRE(write_chakra_trace(t, m, &bytes).ok());
  auto text = dump_chakra_trace(bytes);
  REQUIRE(text.ok());
  CHECK(*text ==
        "# chakra 0.0.4 generator=stagecraft generator_version=0.1.0 rank=0 world_size=1 config_hash=\n"
        "0 a\\x20b\\x5cc\\x0a\\xc3\\xa9 COMP_NODE deps=[] is_cpu_op=false num_ops=1000 tensor_size=300 "
        "duration_micros=5\n");
}

TEST_CASE("chakra dump: errors propagate from the reader") {
  auto text = dump_chakra_trace("\x80");
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().code == ErrorCode::kParseError);
}

// Not run by default (a timing, not a check); run with
// stagecraft_tests -tc='chakra emit throughput' --no-skip.
TEST_CASE("chakra emit throughput" * doctest::skip()) {
  RankTrace t;
  t.rank = 0;
  const int kNodes = 200000;
  t.nodes.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    const uint64_t id = static_cast<uint64_t>(i);
    std::vector<uint64_t> deps;
    if (i > 0) deps.push_back(id - 1);
    if (i > 3) deps.push_back(id - 4);
    switch (i % 4) {
      case 0: t.nodes.push_back(test::compute(id, "layer12.fwd.mlp.fc1", deps, 123456789, 987654, 42)); break;
      case 1: t.nodes.push_back(test::collective(id, "layer12.fwd.mlp.ar", deps, CollectiveType::kAllReduce, 1 << 24, 17)); break;
      case 2: t.nodes.push_back(test::p2p(id, "pp.send.mb3", deps, true, 5, i, 1 << 22)); break;
      default: t.nodes.push_back(test::p2p(id, "pp.recv.mb3", deps, false, 6, i, 1 << 22)); break;
    }
  }
  const TraceMetadata meta = test::test_meta(8);
  std::string out;
  // Process CPU time, not wall time: the machines are shared.
  std::clock_t t0 = std::clock();
  const int kReps = 10;
  size_t bytes = 0;
  for (int r = 0; r < kReps; ++r) {
    out.clear();
    REQUIRE(write_chakra_trace(t, meta, &out).ok());
    bytes += out.size();
  }
  const double write_s = double(std::clock() - t0) / CLOCKS_PER_SEC;
  t0 = std::clock();
  REQUIRE(read_chakra_trace(out).ok());
  const double read_s = double(std::clock() - t0) / CLOCKS_PER_SEC;
  MESSAGE("write: " << bytes / write_s / 1e6 << " MB/s, " << bytes / kReps / double(kNodes)
                    << " B/node; read: " << out.size() / read_s / 1e6 << " MB/s");
}

}  // namespace
}  // namespace sc
