// Golden files: for each tests/golden/cases/<name>.json (a job), the
// canonical graph text and the canonical dump of rank 0's trace must equal
// tests/golden/expected/<name>.graph.txt and <name>.rank0.txt byte for
// byte. After an intended change, rebaseline with
//   STAGECRAFT_UPDATE_GOLDEN=1 build/native/stagecraft_tests -tc='golden*'
// and review the diff like code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_jobs.h"
#include "api/api.h"
#include "emit/chakra_writer.h"

namespace fs = std::filesystem;

namespace {

using sc::testing::slurp;

void check_golden(const fs::path& expected, const std::string& actual) {
  if (std::getenv("STAGECRAFT_UPDATE_GOLDEN")) {
    std::ofstream(expected, std::ios::binary) << actual;
    MESSAGE("updated " << expected.string());
    return;
  }
  REQUIRE_MESSAGE(fs::exists(expected), "missing golden " << expected.string());
  std::string want = slurp(expected);
  if (want == actual) return;
  // Report the first differing line rather than two huge strings.
  std::istringstream a(want), b(actual);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL_CHECK(expected.filename().string() << " differs at line " << line << "\n  expected: " << la
                                          << "\n  actual:   " << lb);
}

}  // namespace

TEST_CASE("golden: graphs and rank traces of the reference cases") {
  const fs::path root = fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "golden";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root / "cases"))
    if (e.path().extension() == ".json") cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 3);
  for (const auto& c : cases) {
    CAPTURE(c.string());
    auto job = sc::parse_job(slurp(c));
    REQUIRE_MESSAGE(job.ok(), job.error().to_string());
    auto gen = sc::Generator::create(job.value());
    REQUIRE_MESSAGE(gen.ok(), gen.error().to_string());
    const std::string name = c.stem().string();
    check_golden(root / "expected" / (name + ".graph.txt"), gen->graph_text());
    auto bytes = gen->rank_trace_bytes(0);
    REQUIRE(bytes.ok());
    auto text = sc::dump_chakra_trace(bytes.value());
    REQUIRE(text.ok());
    check_golden(root / "expected" / (name + ".rank0.txt"), text.value());
    check_golden(root / "expected" / (name + ".groups.json"), gen->groups_json());
  }
}
