// Subcommand entry points; argv excludes "stagecraft" and the command name.
#pragma once

#include <string>
#include <vector>

namespace sc::cli {

int cmd_generate(const std::vector<std::string>& argv);
int cmd_inspect(const std::vector<std::string>& argv);
int cmd_graph(const std::vector<std::string>& argv);
int cmd_dump(const std::vector<std::string>& argv);
int cmd_replay(const std::vector<std::string>& argv);
int cmd_validate(const std::vector<std::string>& argv);
int cmd_simulate(const std::vector<std::string>& argv);
int cmd_plan(const std::vector<std::string>& argv);
int cmd_serve_capacity(const std::vector<std::string>& argv);

// stdout is checked at exit (main.cc): a failed write exits 1 with one
// line on stderr. A command whose real work is already done (generate's
// committed export) adds what is true despite the failure, e.g.
// "out is complete", to that line.
void set_stdout_failure_note(const std::string& note);

// What plan is doing, for the out-of-memory message ("searching layouts
// (simulate phase)").
std::string plan_activity();

// Top-level usage text (stagecraft help).
std::string main_usage();

}  // namespace sc::cli
