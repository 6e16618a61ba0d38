// cli/export.cc (the streaming writer behind `stagecraft generate`): rank
// lists, write failures (disk full, injected), archives, ASTRA-sim inputs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/export.h"
#include "api/astrasim.h"
#include "export.h"
#include "export_archive.h"
#include "progress.h"
#include "../test_jobs.h"

namespace fs = std::filesystem;

namespace sc::cli {
namespace {

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("stagecraft-export-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("export: --ranks lists") {
  auto s = parse_rank_list("4096,0-127,100-130,131", 8192);
  REQUIRE(s.ok());
  CHECK(s->ranges == std::vector<std::pair<int64_t, int64_t>>{{0, 131}, {4096, 4096}});
  CHECK(s->count() == 133);
  CHECK(parse_rank_list("0-3", 4)->all(4));
  for (const char* bad : {"", ",", "1,", "a", "1-", "-1", "3-1", "0-4", "4", "1--2", "1 ,2", "99999999999999999999"}) {
    CAPTURE(bad);
    auto r = parse_rank_list(bad, 4);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().path == "--ranks");
  }
  CHECK(format_for("a/b.zip") == OutputFormat::kZip);
  CHECK(format_for("b.tar.gz") == OutputFormat::kTarGz);
  CHECK(format_for("b.tgz") == OutputFormat::kTarGz);
  CHECK(format_for("out") == OutputFormat::kDirectory);
}

TEST_CASE("export: a write failure (disk full) is a clear error and leaves nothing behind") {
  Generator g = testing::make(testing::gpt_job(1, 64, 4, 2, 4, false, 1, 32));
  auto enc = RankEncoder::create(g);
  REQUIRE(enc.ok());
  fs::path dir = temp_dir("full");
  for (OutputFormat f : {OutputFormat::kDirectory, OutputFormat::kZip, OutputFormat::kTarGz}) {
    // Archives are written in 1 MiB blocks: this small one is a single
    // write (at close); tests/ctest/cli_export.sh fails one mid-stream.
    for (int64_t nth : f == OutputFormat::kDirectory ? std::vector<int64_t>{1, 3, 8} : std::vector<int64_t>{1}) {
      CAPTURE(static_cast<int>(f));
      CAPTURE(nth);
      ExportOptions o;
      o.format = f;
      o.out = dir / (f == OutputFormat::kDirectory ? "out" : f == OutputFormat::kZip ? "out.zip" : "out.tar.gz");
      o.ranks = all_ranks(g.world_size());
      o.progress = ProgressMode::kQuiet;
      ExportStats st;
      inject_write_failure(nth, ENOSPC);
      Status s = run_export(g, *enc, o, &st);
      inject_write_failure(0, 0);
      REQUIRE_FALSE(s.ok());
      CHECK(s.error().code == ErrorCode::kIoError);
      CHECK(s.error().message.find("No space left on device") != std::string::npos);
      CHECK(fs::is_empty(dir));  // no output, no temporary
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("export: archives are deterministic and hold the directory export's files") {
  Generator g = testing::make(testing::gpt_job(1, 64, 4, 2, 2, false, 1, 32));
  auto enc = RankEncoder::create(g);
  REQUIRE(enc.ok());
  fs::path dir = temp_dir("arch");
  for (const char* name : {"a.zip", "b.zip", "a.tar.gz", "b.tar.gz"}) {
    ExportOptions o;
    o.out = dir / name;
    o.format = format_for(name);
    o.ranks = all_ranks(g.world_size());
    o.progress = ProgressMode::kQuiet;
    o.threads = name[0] == 'a' ? 1 : 3;  // thread count must not change the bytes
    ExportStats st;
    Status s = run_export(g, *enc, o, &st);
    REQUIRE_MESSAGE(s.ok(), s.error().to_string());
    CHECK(st.ranks == 4);
    CHECK(st.output_bytes == fs::file_size(o.out));
  }
  CHECK(slurp(dir / "a.zip") == slurp(dir / "b.zip"));
  CHECK(slurp(dir / "a.tar.gz") == slurp(dir / "b.tar.gz"));
  // An existing archive is refused without force.
  ExportOptions o;
  o.out = dir / "a.zip";
  o.format = OutputFormat::kZip;
  o.ranks = all_ranks(g.world_size());
  o.progress = ProgressMode::kQuiet;
  ExportStats st;
  CHECK_FALSE(run_export(g, *enc, o, &st).ok());
  fs::remove_all(dir);
}

TEST_CASE("export: ASTRA-sim inputs match the world size") {
  HardwareProfile hw = hardware_preset("h100").value();
  for (int64_t world : {1, 4, 8, 12, 64, 131072}) {
    CAPTURE(world);
    auto files = astra_sim_inputs(hw, world, "trace", false);
    REQUIRE(files.size() == 4);
    const std::string& net = files[0].text;
    int64_t product = 1;
    auto at = net.find("npus_count: [");
    REQUIRE(at != std::string::npos);
    std::istringstream in(net.substr(at + 13));
    std::string tok;
    while (in >> tok && tok != "]") product *= std::atoll(tok.c_str());
    CHECK(product == world);
    CHECK(files[1].name == "astra-sim/system.json");
    CHECK(files[3].mode == 0755);
  }
  // A hardware name from the job cannot add lines to network.yml.
  hw.name = "x\ninjected: [ 1 ]";
  const std::string net = astra_sim_inputs(hw, 4, "trace", false)[0].text;
  CHECK(net.find("\ninjected") == std::string::npos);
  CHECK(net.find("profile \"x\\ninjected: [ 1 ]\" (") != std::string::npos);
  hw.name = "h100 sxm";
  CHECK(astra_sim_inputs(hw, 4, "trace", false)[0].text.find("profile 'h100 sxm' (") != std::string::npos);
  CHECK(Progress::format_eta(5) == "5s");
  CHECK(Progress::format_eta(65) == "1m05s");
  CHECK(Progress::format_eta(3725) == "1h02m");
}

}  // namespace
}  // namespace sc::cli
