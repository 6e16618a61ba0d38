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
#include <map>
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

// ---- inference jobs: one folder per part (docs/export.md, "Inference jobs").
namespace sc {
namespace {

// Llama 3 8B cut to 2 layers; pools prefill tp 2 (2 ranks), decode dp 2 x tp 2 (4 ranks).
const char* kServe =
    R"({"mode":"inference","model":{"preset":"llama3-8b","num_layers":2},"parallel":{"tp":2},
        "serving":{"prompt_tokens":100,"output_tokens":20,"concurrency":2,
          "disaggregated":{"prefill":{"tp":2},"decode":{"tp":2,"dp":2}}}})";

Response serve_call(RequestHandler& h, const std::string& op, json args) {
  Request r;
  r.op = op;
  r.job_json = kServe;
  r.args = std::move(args);
  return h.handle(r);
}

Generator build_serve() {
  Result<Generator> g = Generator::create(parse_job(kServe).value());
  REQUIRE_MESSAGE(g.ok(), g.error().message);
  return std::move(g).value();
}

}  // namespace

TEST_CASE("serving archive: every part in its folder, in order; a part alone; --ranks per part's world") {
  const Generator g = build_serve();
  CHECK(archive_parts(g) == std::vector<std::string>{"prefill", "decode", "kv_transfer"});
  CHECK(archive_world_size(g) == 6);  // kv_transfer: 2 prefill + 4 decode ranks
  CHECK(archive_world_size(parse_job(kServe).value()) == 6);
  auto names = [&](const ArchiveSpec& spec) {
    std::vector<std::string> out;
    Result<std::vector<ArchiveEntry>> entries = archive_entries(g, spec);
    REQUIRE_MESSAGE(entries.ok(), entries.error().message);
    for (const ArchiveEntry& e : *entries) out.push_back(e.name);
    return out;
  };
  ArchiveSpec files;
  files.ranks = all_ranks(6);
  CHECK(names(files) == std::vector<std::string>{
                            "prefill/trace.0.et", "prefill/trace.1.et", "prefill/comm_groups.json", "prefill/summary.json",
                            "decode/trace.0.et", "decode/trace.1.et", "decode/trace.2.et", "decode/trace.3.et",
                            "decode/comm_groups.json", "decode/summary.json",
                            "kv_transfer/trace.0.et", "kv_transfer/trace.1.et", "kv_transfer/trace.2.et",
                            "kv_transfer/trace.3.et", "kv_transfer/trace.4.et", "kv_transfer/trace.5.et",
                            "kv_transfer/comm_groups.json", "summary.json"});
  ArchiveSpec bundle = files;
  bundle.layout = ArchiveLayout::kBundle;
  bundle.ranks.ranges = {{1, 2}};  // prefill has rank 1 only; decode and kv_transfer 1 and 2
  const std::vector<std::string> astra = {"astra-sim/network.yml", "astra-sim/system.json",
                                          "astra-sim/remote_memory.json", "astra-sim/run.sh"};
  std::vector<std::string> want;
  for (const char* part : {"prefill", "decode", "kv_transfer"}) {
    const std::string d = std::string(part) + "/";
    want.push_back(d + "comm_groups.json");
    if (d != "kv_transfer/") want.push_back(d + "summary.json");
    for (const std::string& a : astra) want.push_back(d + a);
    want.push_back(d + "trace.1.et");
    if (d != "prefill/") want.push_back(d + "trace.2.et");
    want.push_back(d + "manifest.json");
  }
  want.push_back("summary.json");
  want.push_back("manifest.json");
  CHECK(names(bundle) == want);
  // One part alone: its folder's entries, named relative to it.
  ArchiveSpec kv = files;
  kv.part = "kv_transfer";
  CHECK(names(kv) == std::vector<std::string>{"trace.0.et", "trace.1.et", "trace.2.et", "trace.3.et", "trace.4.et",
                                              "trace.5.et", "comm_groups.json"});
  // Errors name the field: a rank past every part's world, an unknown part.
  ArchiveSpec bad = files;
  bad.ranks.ranges = {{0, 6}};
  CHECK(archive_entries(g, bad).error().path == "ranks");
  bad = files;
  bad.part = "mixed";
  CHECK(archive_entries(g, bad).error().path == "phase");
  CHECK(archive_entries(g, bad).error().message.find("prefill, decode, kv_transfer") != std::string::npos);
  const Generator t = testing::make(parse_job(kJob).value());
  ArchiveSpec tp;
  tp.ranks = all_ranks(4);
  tp.part = "decode";
  CHECK(archive_entries(t, tp).error().path == "phase");
  // find_archive_entry: folder names, the top level, nothing outside.
  CHECK(find_archive_entry(g, bundle, "kv_transfer/trace.2.et").value().part == "kv_transfer");
  CHECK(find_archive_entry(g, bundle, "decode/astra-sim/run.sh").value().mode == 0755);
  CHECK(find_archive_entry(g, bundle, "manifest.json").value().part.empty());
  for (const char* no : {"prefill/trace.2.et", "trace.1.et", "mixed/trace.1.et", "kv_transfer/summary.json", "comm_groups.json"})
    CHECK_MESSAGE(find_archive_entry(g, bundle, no).error().path == "name", no);
}

TEST_CASE("serving archive: generate's .zip and directory hold the request layer's entries and bytes; manifests per folder") {
  const Generator g = build_serve();
  RequestHandler h;
  Result<ArchiveEncoder> enc = ArchiveEncoder::create(g);
  REQUIRE(enc.ok());
  const fs::path dir = fs::temp_directory_path() / ("stagecraft-serving-archive-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const bool zip : {true, false}) {
    CAPTURE(zip);
    cli::ExportOptions o;
    o.out = dir / (zip ? "s.zip" : "s");
    o.format = zip ? cli::OutputFormat::kZip : cli::OutputFormat::kDirectory;
    o.ranks = all_ranks(6);
    o.progress = cli::ProgressMode::kQuiet;
    cli::ExportStats st;
    Status s = cli::run_export(g, *enc, o, &st);
    REQUIRE_MESSAGE(s.ok(), s.error().to_string());
    const char* layout = zip ? "bundle" : "files";
    Response man = serve_call(h, "archive_manifest", {{"layout", layout}, {"sizes", true}});
    REQUIRE_MESSAGE(man.ok(), man.envelope);
    const json m = json::parse(man.body);
    CHECK(m["worldSize"] == 6);
    std::vector<Member> members;
    if (zip) {
      members = read_archive(o.out);
    } else {
      for (const json& e : m["entries"]) members.push_back({e["name"], testing::slurp(o.out / e["name"].get<std::string>()), 0});
      size_t on_disk = 0;
      for (const auto& f : fs::recursive_directory_iterator(o.out)) on_disk += f.is_regular_file();
      CHECK(on_disk == m["entries"].size());
    }
    REQUIRE(members.size() == m["entries"].size());
    std::map<std::string, std::string> by_name;
    for (size_t i = 0; i < members.size(); ++i) {
      const json& e = m["entries"][i];
      CAPTURE(members[i].name);
      CHECK(e["name"] == members[i].name);
      CHECK(e["bytes"] == members[i].bytes.size());
      Response b = serve_call(h, "archive_entry", {{"layout", layout}, {"name", members[i].name}});
      REQUIRE_MESSAGE(b.ok(), b.envelope);
      CHECK(b.body == members[i].bytes);
      by_name[members[i].name] = members[i].bytes;
      if (e["kind"] == "trace" && e["part"] != "kv_transfer")
        CHECK(b.body == g.phase(e["part"].get<std::string>())->rank_trace_bytes(e["rank"].get<int64_t>()).value());
    }
    // The kv_transfer folder's traces are the rank preview's (phase kv_transfer).
    for (int r = 0; r < 6; ++r) {
      Response t = serve_call(h, "rank_trace", {{"rank", r}, {"phase", "kv_transfer"}});
      REQUIRE_MESSAGE(t.ok(), t.envelope);
      CHECK(t.body == by_name["kv_transfer/trace." + std::to_string(r) + ".et"]);
    }
    if (!zip) continue;
    // Each folder's manifest lists that folder's other members (relative
    // names, true digests); the top one lists every other member.
    for (const char* part : {"prefill", "decode", "kv_transfer"}) {
      CAPTURE(part);
      const std::string d = std::string(part) + "/";
      const json pm = json::parse(by_name[d + "manifest.json"]);
      CHECK(pm["inference_iteration"] == part);
      size_t n = 0;
      for (const Member& mem : members) n += mem.name.compare(0, d.size(), d) == 0 && mem.name != d + "manifest.json";
      REQUIRE(pm["files"].size() == n);
      for (const json& f : pm["files"]) {
        const std::string& bytes = by_name[d + f["name"].get<std::string>()];
        CHECK(f["bytes"] == bytes.size());
        CHECK(f["sha256"] == sha256_hex(bytes));
      }
    }
    const json top = json::parse(members.back().bytes);
    REQUIRE(top["files"].size() == members.size() - 1);
    for (size_t i = 0; i + 1 < members.size(); ++i) {
      CHECK(top["files"][i]["name"] == members[i].name);
      CHECK(top["files"][i]["sha256"] == sha256_hex(members[i].bytes));
    }
    // A part alone (the phase argument) is that folder, names relative.
    Response kv = serve_call(h, "archive_manifest", {{"layout", "bundle"}, {"phase", "kv_transfer"}});
    REQUIRE_MESSAGE(kv.ok(), kv.envelope);
    for (const json& e : json::parse(kv.body)["entries"]) {
      Response b = serve_call(h, "archive_entry", {{"layout", "bundle"}, {"phase", "kv_transfer"}, {"name", e["name"]}});
      REQUIRE_MESSAGE(b.ok(), b.envelope);
      CHECK(b.body == by_name["kv_transfer/" + e["name"].get<std::string>()]);
    }
  }
  // The preview's other kv_transfer answers: no groups, the rank's pool.
  Response gr = serve_call(h, "groups", {{"phase", "kv_transfer"}});
  REQUIRE(gr.ok());
  CHECK(json::parse(gr.envelope)["worldSize"] == 6);
  CHECK(json::parse(gr.body).empty());
  Response info = serve_call(h, "rank_info", {{"rank", 3}, {"phase", "kv_transfer"}});
  REQUIRE(info.ok());
  CHECK(json::parse(info.body)["pool"] == "decode");
  CHECK(json::parse(info.body)["pool_rank"] == 1);
  CHECK(serve_call(h, "rank_trace", {{"rank", 6}, {"phase", "kv_transfer"}}).error->path == "rank");
  fs::remove_all(dir);
}

}  // namespace sc
