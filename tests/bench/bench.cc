// stagecraft_bench: export throughput at scale (issue 4). Not a test: it
// prints figures; docs/performance.md records them and the command.
//
//   build/native/stagecraft_bench [--dp 512,4096,16384] [--dir /work/bench-out]
//                                 [--threads N] [--layers 10] [--pp N] [--format dir|zip|tar.gz]
//                                 [--moe 1]
//
// Per size (each in a forked child, so peak RSS is that size's own):
// Llama-3-70B-class job, tp 8 x dp (x pp), micro-batch 1, global batch
// 8 * dp (8 micro-batches per rank); times the graph build (Generator +
// RankEncoder) separately from the export (cli/export.cc: every rank to a
// directory, like `stagecraft generate -o DIR`), then deletes the export and
// times a plain copy of the same bytes in the same number of files (one
// buffer written to each file with write(2), one thread, like cp with free
// reads) and deletes it too. Sizes that do not fit on the disk are skipped.
// --moe 1: a DeepSeek-V3-class job instead (MLA, 256 experts top-8, the
// first min(3, layers - 1) layers dense), tp 1, ep 64, expert tp 1, ZeRO 1.
//
//   build/native/stagecraft_bench --inspect tests/bench/jobs/a.json,b.json [--repeat 3]
//
// --inspect (issue 11): per job file, the time of `Generator::create` (what
// `stagecraft inspect` spends: build, shard, lower every role, summary) at
// the job's micro-batch count, and as the baseline in the same run the same
// job with the fewest micro-batches it accepts (one per data-parallel rank,
// or pp for interleaved-1f1b); ratio = full / baseline. Best of --repeat.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/export.h"
#include "export_archive.h"
#include "export.h"

namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;

namespace {

double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

struct Opts {
  std::vector<int64_t> dps = {512, 4096, 16384};
  std::string dir = "/work/bench-out";
  int threads = 0;
  int64_t layers = 10;
  int64_t pp = 0;
  std::string format = "dir";
  bool moe = false;
  std::vector<std::string> inspect;
  int repeat = 3;
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best wall and CPU time of `repeat` Generator::create calls, and the node count.
bool time_create(const std::string& json, int repeat, double* best, double* best_cpu, int64_t* nodes,
                 int64_t* mbs) {
  auto job = sc::parse_job(json);
  if (!job.ok()) {
    std::fprintf(stderr, "job: %s\n", job.error().to_string().c_str());
    return false;
  }
  *best = *best_cpu = 1e30;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = clk::now();
    const double c0 = cpu_seconds();
    auto gen = sc::Generator::create(*job);
    const double t = since(t0);
    *best_cpu = std::min(*best_cpu, cpu_seconds() - c0);
    if (!gen.ok()) {
      std::fprintf(stderr, "generator: %s\n", gen.error().to_string().c_str());
      return false;
    }
    *best = std::min(*best, t);
    auto summary = nlohmann::json::parse(gen->summary_json());
    *nodes = 0;
    for (const auto& st : summary["stages"]) *nodes += st["trace"]["nodes_per_rank"].get<int64_t>();
    *mbs = summary["micro_batches_per_iteration"].get<int64_t>();
  }
  return true;
}

int run_inspect(const Opts& o) {
  int rc = 0;
  for (const std::string& path : o.inspect) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!in || j.is_discarded()) {
      std::fprintf(stderr, "%s: cannot read a JSON job\n", path.c_str());
      rc = 1;
      continue;
    }
    auto base = j;
    const auto& par = j.value("parallel", nlohmann::json::object());
    const auto& tr = j.value("training", nlohmann::json::object());
    const int64_t dp = par.value("dp", 1), mb = tr.value("micro_batch_size", 1), pp = par.value("pp", 1);
    const bool interleaved = tr.value("schedule", std::string()) == "interleaved-1f1b";
    base["training"]["global_batch_size"] = dp * mb * (interleaved ? pp : 1);
    double t_full = 0, t_base = 0, c_full = 0, c_base = 0;
    int64_t n_full = 0, n_base = 0, m_full = 0, m_base = 0;
    if (!time_create(j.dump(), o.repeat, &t_full, &c_full, &n_full, &m_full) ||
        !time_create(base.dump(), o.repeat, &t_base, &c_base, &n_base, &m_base)) {
      rc = 1;
      continue;
    }
    std::printf("%s: %lld micro-batches %.3f s wall %.3f s CPU (%lld nodes over all roles)  |  baseline %lld "
                "micro-batches %.3f s wall %.3f s CPU (%lld nodes)  |  CPU ratio %.2f, node ratio %.2f\n",
                path.c_str(), (long long)m_full, t_full, c_full, (long long)n_full, (long long)m_base, t_base, c_base,
                (long long)n_base, c_full / c_base, static_cast<double>(n_full) / static_cast<double>(n_base));
    std::fflush(stdout);
  }
  return rc;
}

int run_one(const Opts& o, int64_t dp) {
  const std::string pp = o.pp ? ", \"pp\": " + std::to_string(o.pp) : std::string();
  const std::string training = "}, \"training\": {\"micro_batch_size\": 1, \"global_batch_size\": " +
                               std::to_string(8 * dp) + "}}";
  std::string json = "{\"model\": {\"preset\": \"llama3-70b\", \"num_layers\": " + std::to_string(o.layers) +
                     "}, \"parallel\": {\"tp\": 8, \"dp\": " + std::to_string(dp) + pp + training;
  if (o.moe)
    json = "{\"model\": {\"preset\": \"deepseek-v3\", \"num_layers\": " + std::to_string(o.layers) +
           ", \"first_dense_layers\": " + std::to_string(std::min<int64_t>(3, o.layers - 1)) +
           "}, \"parallel\": {\"tp\": 1, \"ep\": 64, \"expert_tp\": 1, \"zero\": 1, \"dp\": " + std::to_string(dp) +
           pp + training;
  auto job = sc::parse_job(json);
  if (!job.ok()) {
    std::fprintf(stderr, "job: %s\n", job.error().to_string().c_str());
    return 1;
  }
  auto t0 = clk::now();
  auto gen = sc::Generator::create(*job);
  if (!gen.ok()) {
    std::fprintf(stderr, "generator: %s\n", gen.error().to_string().c_str());
    return 1;
  }
  double t_graph = since(t0);
  auto t1 = clk::now();
  auto enc = sc::RankEncoder::create(*gen);
  if (!enc.ok()) return 1;
  double t_enc = since(t1);
  const int64_t world = gen->world_size();
  sc::RankEncoder::Scratch scratch;
  std::string rank0(*enc->encode(0, &scratch));
  const double expect = static_cast<double>(rank0.size()) * world;

  struct statvfs vfs {};
  fs::create_directories(o.dir);
  statvfs(o.dir.c_str(), &vfs);
  const double free_bytes = static_cast<double>(vfs.f_bavail) * vfs.f_frsize;
  if (expect * 1.05 + 2e9 > free_bytes) {
    std::printf("dp %6lld  %7lld ranks  SKIPPED: needs %.1f GB, %.1f GB free on %s\n", (long long)dp,
                (long long)world, expect / 1e9, free_bytes / 1e9, o.dir.c_str());
    return 0;
  }

  sc::cli::ExportOptions eo;
  eo.format = o.format == "zip" ? sc::cli::OutputFormat::kZip
              : o.format == "tar.gz" ? sc::cli::OutputFormat::kTarGz
                                     : sc::cli::OutputFormat::kDirectory;
  eo.out = fs::path(o.dir) / (o.format == "dir" ? "export" : "export." + o.format);
  eo.force = true;
  eo.ranks = sc::cli::all_ranks(world);
  eo.threads = o.threads;
  eo.progress = sc::cli::ProgressMode::kQuiet;
  sc::cli::ExportStats st;
  std::error_code ec;
  fs::remove_all(eo.out, ec);
  sync();
  auto t2 = clk::now();
  sc::Status s = sc::cli::run_export(*gen, *enc, eo, &st);
  double t_export = since(t2);
  if (!s.ok()) {
    std::fprintf(stderr, "export: %s\n", s.error().to_string().c_str());
    fs::remove_all(eo.out, ec);
    return 1;
  }
  auto t3 = clk::now();
  fs::remove_all(eo.out, ec);
  sync();
  double t_rm = since(t3);

  // Plain copy: the same bytes in the same number of files, one thread.
  fs::path copy = fs::path(o.dir) / "plain-copy";
  fs::remove_all(copy, ec);
  fs::create_directories(copy);
  uint64_t copy_bytes = 0;
  auto t4 = clk::now();
  const bool one_file = eo.format != sc::cli::OutputFormat::kDirectory;
  int fd = -1;
  if (one_file) fd = ::open((copy / "copy.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int64_t r = 0; r < world; ++r) {
    if (!one_file) fd = ::open((copy / ("trace." + std::to_string(r) + ".et")).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || !sc::cli::write_fully(fd, rank0.data(), rank0.size())) {
      std::fprintf(stderr, "plain copy: %s\n", std::strerror(errno));
      fs::remove_all(copy, ec);
      return 1;
    }
    copy_bytes += rank0.size();
    if (!one_file) ::close(fd);
  }
  if (one_file) ::close(fd);
  double t_copy = since(t4);
  fs::remove_all(copy, ec);
  sync();

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double out_bytes = static_cast<double>(st.output_bytes);
  const double ratio = (t_export / out_bytes) / (t_copy / static_cast<double>(copy_bytes));
  std::printf(
      "dp %6lld  %7lld ranks  graph %.2f s  encoder %.3f s  export %.2f s  %.0f ranks/s  %.2f GB traces  %.2f GB out  "
      "%.0f MB/s  copy %.2f s (%.0f MB/s)  export/copy %.2f  peak RSS %.0f MiB  threads %d  (rm %.1f s)\n",
      (long long)dp, (long long)world, t_graph, t_enc, t_export, world / t_export, st.trace_bytes / 1e9,
      out_bytes / 1e9, out_bytes / t_export / 1e6, t_copy, copy_bytes / t_copy / 1e6, ratio, ru.ru_maxrss / 1024.0,
      st.threads, t_rm);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dp") {
      o.dps.clear();
      for (size_t p = 0; p < v.size();) {
        size_t c = v.find(',', p);
        o.dps.push_back(std::atoll(v.substr(p, c - p).c_str()));
        p = c == std::string::npos ? v.size() : c + 1;
      }
    } else if (k == "--dir") {
      o.dir = v;
    } else if (k == "--threads") {
      o.threads = std::atoi(v.c_str());
    } else if (k == "--layers") {
      o.layers = std::atoll(v.c_str());
    } else if (k == "--pp") {
      o.pp = std::atoll(v.c_str());
    } else if (k == "--format") {
      o.format = v;
    } else if (k == "--moe") {
      o.moe = v != "0";
    } else if (k == "--inspect") {
      for (size_t p = 0; p < v.size();) {
        size_t c = v.find(',', p);
        o.inspect.push_back(v.substr(p, c - p));
        p = c == std::string::npos ? v.size() : c + 1;
      }
    } else if (k == "--repeat") {
      o.repeat = std::max(1, std::atoi(v.c_str()));
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (!o.inspect.empty()) return run_inspect(o);
  std::printf("stagecraft_bench: %s, %lld layers, %s%s, micro-batch 1, global batch 8*dp (8 micro-batches), "
              "%d cores, output %s (%s)\n",
              o.moe ? "deepseek-v3 (MoE + MLA)" : "llama3-70b", (long long)o.layers,
              o.moe ? "tp 1, ep 64, expert tp 1, ZeRO 1" : "tp 8", o.pp ? (" x pp " + std::to_string(o.pp)).c_str() : "",
              (int)sysconf(_SC_NPROCESSORS_ONLN), o.dir.c_str(), o.format.c_str());
  int rc = 0;
  for (int64_t dp : o.dps) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(run_one(o, dp));
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}
