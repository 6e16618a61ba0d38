// Runs a function in a forked child and reports how the child ended: the
// one way to test an always-on SC_CHECK (which aborts) from doctest.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <string>

namespace sc::testing {

struct ChildEnd {
  bool aborted = false;  // killed by SIGABRT
  std::string err;       // what it wrote to stderr
};

inline ChildEnd run_in_child(const std::function<void()>& f) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    // doctest's crash handler would report the abort as this test's crash
    // and carry on running tests in the child: die as a plain process.
    std::signal(SIGABRT, SIG_DFL);
    f();
    _exit(0);  // returned normally: no check fired
  }
  close(fds[1]);
  ChildEnd end;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) end.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  end.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return end;
}

}  // namespace sc::testing
