// The archive has one definition (core/api/export.h, archive_entries): the
// CLI's directory, .zip and .tar.gz hold exactly its entries, in its order,
// with the bytes the request layer's archive_entry returns (the browser's
// zip path); manifest.json, computed by the core with base/sha256 and by
// the CLI with OpenSSL, is the same file and lists true sizes and digests.
#include <doctest/doctest.h>

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/export.h"
#include "api/request.h"
#include "base/sha256.h"
#include "export.h"
#include "../test_jobs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace sc {
namespace {

// pp 2 x dp 2 (4 ranks, two roles), so traces differ per rank and role.
const char* kJob =
    R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"pp":2,"dp":2},
        "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":8}})";

// Every member of a zip or tar.gz, in archive order: (name, bytes, mode).
struct Member {
  std::string name, bytes;
  int mode = 0;
};
std::vector<Member> read_archive(const fs::path& p) {
  std::vector<Member> out;
  struct archive* a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_zip(a);
  archive_read_support_format_tar(a);
  REQUIRE(archive_read_open_filename(a, p.c_str(), 16384) == ARCHIVE_OK);
  struct archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    Member m;
    m.name = archive_entry_pathname(e);
    m.mode = static_cast<int>(archive_entry_perm(e));
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) m.bytes.append(buf, static_cast<size_t>(n));
    out.push_back(std::move(m));
  }
  archive_read_free(a);
  return out;
}

Response call(RequestHandler& h, const std::string& op, json args) {
  Request r;
  r.op = op;
  r.job_json = kJob;
  r.args = std::move(args);
  return h.handle(r);
}

fs::path export_to(const Generator& g, const std::string& name, cli::OutputFormat format, const RankSelection& ranks,
                   const std::string& prefix) {
  fs::path dir = fs::temp_directory_path() / ("stagecraft-archive-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  cli::ExportOptions o;
  o.out = dir / name;
  o.format = format;
  o.prefix = prefix;
  o.ranks = ranks;
  o.progress = cli::ProgressMode::kQuiet;
  o.force = true;
  Result<RankEncoder> enc = RankEncoder::create(g);
  REQUIRE(enc.ok());
  cli::ExportStats st;
  Status s = cli::run_export(g, *enc, o, &st);
  REQUIRE_MESSAGE(s.ok(), s.error().to_string());
  return o.out;
}

}  // namespace

TEST_CASE("archive: the entries and their order, for a directory (and the browser's zip) and for a bundle") {
  const Generator g = testing::make(parse_job(kJob).value());
  ArchiveSpec files;
  files.ranks = all_ranks(4);
  auto names = [&](const ArchiveSpec& spec) {
    std::vector<std::string> out;
    const std::vector<ArchiveEntry> entries = archive_entries(g, spec).value();
    for (const ArchiveEntry& e : entries) out.push_back(e.name);
    return out;
  };
  CHECK(names(files) == std::vector<std::string>{"trace.0.et", "trace.1.et", "trace.2.et", "trace.3.et",
                                                 "comm_groups.json", "summary.json"});
  ArchiveSpec bundle = files;
  bundle.layout = ArchiveLayout::kBundle;
  bundle.prefix = "wl";
  bundle.ranks.ranges = {{1, 2}};
  CHECK(names(bundle) == std::vector<std::string>{"comm_groups.json", "summary.json", "astra-sim/network.yml",
                                                  "astra-sim/system.json", "astra-sim/remote_memory.json",
                                                  "astra-sim/run.sh", "wl.1.et", "wl.2.et", "manifest.json"});
  // Bad specs name their field.
  ArchiveSpec bad = files;
  bad.prefix = "../x";
  CHECK(archive_entries(g, bad).error().path == "prefix");
  bad = files;
  bad.ranks.ranges = {{2, 4}};
  CHECK(archive_entries(g, bad).error().path == "ranks");
  bad.ranks.ranges = {{2, 3}, {0, 2}};
  CHECK(archive_entries(g, bad).error().path == "ranks");
  // find_archive_entry: traces of selected ranks in canonical spelling only.
  CHECK(find_archive_entry(g, bundle, "wl.2.et").value().rank == 2);
  for (const char* no : {"wl.0.et", "wl.3.et", "wl.02.et", "wl.+1.et", "wl..et", "trace.1.et", "summary", ""})
    CHECK_MESSAGE(find_archive_entry(g, bundle, no).error().path == "name", no);
  CHECK(find_archive_entry(g, bundle, "astra-sim/run.sh").value().mode == 0755);
}

TEST_CASE("archive: generate's .zip, .tar.gz and directory hold exactly the request layer's entries and bytes") {
  const Generator g = testing::make(parse_job(kJob).value());
  RequestHandler h;
  struct Case {
    const char* out;
    cli::OutputFormat format;
    const char* layout;
  };
  for (const Case& c : {Case{"a.zip", cli::OutputFormat::kZip, "bundle"},
                        Case{"a.tar.gz", cli::OutputFormat::kTarGz, "bundle"},
                        Case{"a-dir", cli::OutputFormat::kDirectory, "files"}}) {
    CAPTURE(c.out);
    const fs::path out = export_to(g, c.out, c.format, all_ranks(4), "trace");
    Response man = call(h, "archive_manifest", {{"layout", c.layout}, {"sizes", true}});
    REQUIRE_MESSAGE(man.ok(), man.envelope);
    const json m = json::parse(man.body);
    CHECK(m["layout"] == c.layout);
    CHECK(m["worldSize"] == 4);
    std::vector<Member> members;
    if (c.format == cli::OutputFormat::kDirectory) {
      for (const json& e : m["entries"]) members.push_back({e["name"], testing::slurp(out / e["name"].get<std::string>()), 0});
      size_t on_disk = 0;
      for ([[maybe_unused]] const auto& f : fs::directory_iterator(out)) ++on_disk;
      CHECK(on_disk == m["entries"].size());
    } else {
      members = read_archive(out);
    }
    REQUIRE(members.size() == m["entries"].size());
    for (size_t i = 0; i < members.size(); ++i) {
      const json& e = m["entries"][i];
      CAPTURE(members[i].name);
      CHECK(e["name"] == members[i].name);
      CHECK(e["bytes"] == members[i].bytes.size());
      if (c.format != cli::OutputFormat::kDirectory) CHECK(members[i].mode == std::stoi(e["mode"].get<std::string>(), nullptr, 8));
      Response b = call(h, "archive_entry", {{"layout", c.layout}, {"name", members[i].name}});
      REQUIRE_MESSAGE(b.ok(), b.envelope);
      CHECK(b.body == members[i].bytes);
      CHECK(json::parse(b.envelope)["bytes"] == members[i].bytes.size());
      if (e["kind"] == "trace") CHECK(b.body == g.rank_trace_bytes(e["rank"].get<int64_t>()).value());
    }
    if (c.format != cli::OutputFormat::kDirectory) {
      // manifest.json lists every other member with its true size and digest.
      const json mf = json::parse(members.back().bytes);
      CHECK(members.back().name == "manifest.json");
      REQUIRE(mf["files"].size() == members.size() - 1);
      for (size_t i = 0; i + 1 < members.size(); ++i) {
        CHECK(mf["files"][i]["name"] == members[i].name);
        CHECK(mf["files"][i]["bytes"] == members[i].bytes.size());
        CHECK(mf["files"][i]["sha256"] == sha256_hex(members[i].bytes));
      }
      CHECK(mf["ranks"] == "all");
      CHECK(mf["world_size"] == 4);
    }
  }
  fs::remove_all(fs::temp_directory_path() / ("stagecraft-archive-test-" + std::to_string(::getpid())));
}

TEST_CASE("archive: a --ranks subset with another prefix: the CLI's manifest equals the core's") {
  const Generator g = testing::make(parse_job(kJob).value());
  RankSelection sel;
  sel.ranges = {{0, 0}, {2, 3}};
  const fs::path out = export_to(g, "sub.zip", cli::OutputFormat::kZip, sel, "wl");
  std::vector<Member> members = read_archive(out);
  ArchiveSpec spec;
  spec.layout = ArchiveLayout::kBundle;
  spec.prefix = "wl";
  spec.ranks = sel;
  std::vector<ArchiveEntry> entries = archive_entries(g, spec).value();
  REQUIRE(members.size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    CHECK(members[i].name == entries[i].name);
    CHECK(members[i].bytes == archive_entry_bytes(g, spec, entries[i]).value());
  }
  const json mf = json::parse(members.back().bytes);
  CHECK(mf["ranks"] == "0,2-3");
  CHECK(mf["trace_prefix"] == "wl");
  CHECK(members[5].bytes.find("holds only some ranks") != std::string::npos);  // run.sh says so
  fs::remove_all(out.parent_path());
}

TEST_CASE("archive: request errors name the argument") {
  RequestHandler h;
  auto path_of = [&](const std::string& op, json args) {
    Response r = call(h, op, std::move(args));
    REQUIRE_FALSE(r.ok());
    CHECK(r.body.empty());
    CHECK(json::parse(r.envelope)["ok"] == false);
    return r.error->path;
  };
  CHECK(path_of("archive_manifest", {{"layout", "tar"}}) == "layout");
  CHECK(path_of("archive_manifest", {{"layout", 1}}) == "layout");
  CHECK(path_of("archive_manifest", {{"prefix", "a/b"}}) == "prefix");
  CHECK(path_of("archive_manifest", {{"prefix", 7}}) == "prefix");
  CHECK(path_of("archive_manifest", {{"sizes", "yes"}}) == "sizes");
  CHECK(path_of("archive_entry", json::object()) == "name");
  CHECK(path_of("archive_entry", {{"name", 3}}) == "name");
  CHECK(path_of("archive_entry", {{"name", "trace.4.et"}}) == "name");
  CHECK(path_of("archive_entry", {{"name", "manifest.json"}}) == "name");  // files layout has none
  CHECK(path_of("archive_entry", {{"name", "astra-sim/run.sh"}}) == "name");
  // Without sizes, the manifest still gives every file's size, and no trace's.
  Response m = call(h, "archive_manifest", json::object());
  REQUIRE(m.ok());
  for (const json& e : json::parse(m.body)["entries"]) CHECK(e.contains("bytes") == (e["kind"] == "file"));
}

}  // namespace sc
