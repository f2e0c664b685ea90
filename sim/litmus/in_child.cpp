#include "sim/litmus/in_child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

namespace p2psim::litmus {

child_output in_child(const std::function<std::string()>& work) {
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error("pipe failed");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fd[0]);
    const std::string text = work();
    for (size_t off = 0; off < text.size();) {
      ssize_t n = write(fd[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += size_t(n);
    }
    close(fd[1]);
    _exit(0);
  }
  close(fd[1]);
  child_output out;
  char buf[4096];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) out.text.append(buf, size_t(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || out.text.empty())
    out.error = WIFSIGNALED(status) ? fmt::format("the run crashed (signal {})", WTERMSIG(status))
                                    : "the run ended without a result";
  return out;
}

}  // namespace p2psim::litmus
