// stagecraft: synthesizes Chakra execution traces for ASTRA-sim.
// Dispatches to one file per subcommand; never lets an exception escape
// (the core returns errors as values; this guards allocation failures).
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "api/api.h"
#include "args.h"
#include "base/cancel.h"
#include "commands.h"

namespace sc::cli {

std::string main_usage() {
  return "usage: stagecraft <command> [options]\n"
         "\n"
         "Synthesizes Chakra execution traces (one .et file per rank) of\n"
         "distributed LLM training for the ASTRA-sim simulator.\n"
         "\n"
         "Commands:\n"
         "  generate   write <prefix>.<rank>.et, comm_groups.json, summary.json to a directory\n"
         "  inspect    print a summary of a job (--json: summary.json) without writing files\n"
         "  graph      print the sharded symbolic graph of a job as text\n"
         "  dump       print a .et file as text\n"
         "  replay     replay a generated directory's (or archive's) ranks together; check they run to completion\n"
         "  validate   check a directory's (or archive's) traces across ranks for what makes the simulator abort or hang\n"
         "  simulate   the step time of the whole job: MFU, bubble, exposed communication, critical path\n"
         "  plan       the fastest parallel layout of a model on N GPUs that fits in memory\n"
         "  serve-capacity  the highest request rate a serving job holds at its P99 TTFT/TPOT targets\n"
         "  help       show this help, or 'stagecraft help <command>'\n"
         "\n"
         "Options:\n"
         "  --version  print the version\n"
         "  --help     show this help\n"
         "\n"
         "Example:\n"
         "  stagecraft generate --model gpt3-1.7b --dp 2 --tp 2 --seq-len 256 -o out\n"
         "Job files and flags: docs/job-format.md, docs/cli.md.\n";
}

namespace {

std::string g_command;  // for the out-of-memory message

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << main_usage();
    return kExitUsage;
  }
  std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const bool lone = command == "--version" || command == "version" || command == "--help" || command == "-h";
  if ((lone && !rest.empty()) || (command == "help" && rest.size() > 1)) {
    std::cerr << "stagecraft: " << echo_text(command) << " takes " << (command == "help" ? "at most one command" : "no argument")
              << " (got '" << echo_text(rest[command == "help" ? 1 : 0]) << "')\n(see 'stagecraft help')\n";
    return kExitUsage;
  }
  if (command == "--version" || command == "version") {
    std::cout << "stagecraft " << stagecraft_version() << "\n";
    return kExitOk;
  }
  if (command == "--help" || command == "-h") {
    std::cout << main_usage();
    return kExitOk;
  }
  if (command == "help") {
    // `help`, `help help` and `help --help`: help is its own command.
    if (rest.empty() || rest[0] == "help" || rest[0] == "--help" || rest[0] == "-h") {
      std::cout << main_usage();
      return kExitOk;
    }
    command = rest[0];
    rest = {"--help"};
    if (command != "generate" && command != "inspect" && command != "graph" && command != "dump" &&
        command != "replay" && command != "validate" && command != "simulate" && command != "plan" &&
        command != "serve-capacity") {
      return usage_error("help", "unknown command '" + echo_text(command) + "'");
    }
  }
  g_command = command;
  if (command == "generate") return cmd_generate(rest);
  if (command == "inspect") return cmd_inspect(rest);
  if (command == "graph") return cmd_graph(rest);
  if (command == "dump") return cmd_dump(rest);
  if (command == "replay") return cmd_replay(rest);
  if (command == "validate") return cmd_validate(rest);
  if (command == "simulate") return cmd_simulate(rest);
  if (command == "plan") return cmd_plan(rest);
  if (command == "serve-capacity") return cmd_serve_capacity(rest);
  // Echoed as every argument is in a message: escaped and clipped
  // (docs/cli.md), never a raw control character or invalid UTF-8.
  std::cerr << "stagecraft: unknown command '" << echo_text(command) << "'\n"
            << "(see 'stagecraft help')\n";
  return kExitUsage;
}

}  // namespace

std::string out_of_memory_message() {
  if (g_command == "plan")
    return "stagecraft plan: error: out of memory " + plan_activity() +
           " (narrow the search: fix or bound degrees; docs/plan.md)";
  const bool builds = g_command == "generate" || g_command == "inspect" || g_command == "graph";
  return builds ? "stagecraft " + g_command + ": error: out of memory building the job (try a smaller job; see the budgets in docs/promises.md)"
                : "stagecraft " + (g_command.empty() ? std::string("") : g_command + ": ") +
                      "error: out of memory reading the input";
}

// Every command's output goes through std::cout (synchronised with
// stdio's stdout). A write that failed (a full disk, /dev/full, a closed
// pipe's EIO) must not exit 0 with truncated output: flush, check the
// stream's error state, and close the descriptor (NFS reports some errors
// only then). One line on stderr; exit 1 unless the command already failed.
namespace {
// std::cout's buffer: stdio's stdout (so it interleaves with printf as
// before), remembering the errno of the first failed write.
class CheckedStdout : public std::streambuf {
 public:
  int err = 0;

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (std::fputc(traits_type::to_char_type(c), stdout) == EOF) return note(), traits_type::eof();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const size_t w = std::fwrite(s, 1, static_cast<size_t>(n), stdout);
    if (w < static_cast<size_t>(n)) note();
    return static_cast<std::streamsize>(w);
  }
  int sync() override { return std::fflush(stdout) == 0 ? 0 : (note(), -1); }

 private:
  void note() {
    if (!err) err = errno;
  }
};
CheckedStdout* g_stdout = nullptr;
std::string g_stdout_note;
}  // namespace

void set_stdout_failure_note(const std::string& note) { g_stdout_note = note; }

void check_stdout_writes() {
  g_stdout = new CheckedStdout;  // never freed: std::cout may be flushed at exit
  std::cout.rdbuf(g_stdout);
}

int finish_stdout(int rc) {
  std::cout.flush();
  bool failed = std::cout.bad() || std::cout.fail();
  int err = g_stdout ? g_stdout->err : 0;
  if (std::fflush(stdout) != 0) {
    failed = true;
    if (!err) err = errno;
  }
  if (std::ferror(stdout)) failed = true;
  if (!failed && ::close(STDOUT_FILENO) != 0 && errno != EBADF) {
    failed = true;
    err = errno;
  }
  if (!failed) return rc;
  std::cerr << (g_command.empty() ? std::string("stagecraft: ") : "stagecraft " + g_command + ": ")
            << "error: cannot write to standard output: " << (err ? std::strerror(err) : "write error")
            << (g_stdout_note.empty() ? "" : " (" + g_stdout_note + ")") << "\n";
  return rc == kExitOk ? kExitError : rc;
}

}  // namespace sc::cli

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) would kill the process by SIGXFSZ
  // mid-write, leaving OUT.tmp-<pid>; ignored, the write fails with EFBIG
  // and the ordinary error path reports it and removes the temporary.
  std::signal(SIGXFSZ, SIG_IGN);
  // A cancelled build is not freed: the process ends right after it.
  sc::set_keep_on_cancel(true);
  try {
    sc::cli::check_stdout_writes();
    return sc::cli::finish_stdout(sc::cli::run(argc, argv));
  } catch (const std::bad_alloc&) {
    std::cerr << sc::cli::out_of_memory_message() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "stagecraft: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "stagecraft: internal error\n";
  }
  return sc::cli::kExitError;
}
