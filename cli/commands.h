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
// What plan is doing, for the out-of-memory message ("searching layouts
// (simulate phase)").
std::string plan_activity();

// Top-level usage text (stagecraft help).
std::string main_usage();

}  // namespace sc::cli
