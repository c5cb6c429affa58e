#include "child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.hpp"

#include "fmsim/common/error.hpp"
#include "fmsim/common/fd_io.hpp"

namespace fmsim::cli {
ChildResult run_fmsim(const std::vector<std::string>& arguments) {
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) throw InternalError("cannot find the fmsim executable (/proc/self/exe)");
  self[length] = '\0';
  std::vector<std::string> argv_text = {self};
  argv_text.insert(argv_text.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& text : argv_text) argv.push_back(text.data());
  argv.push_back(nullptr);
  // stdout through a pipe; stderr to an unlinked temporary file, so a chatty child never blocks on it.
  // Both close on exec, so a sibling started by another sweep thread does not hold this pipe open.
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw InternalError("pipe() failed");
  std::FILE* err_file = std::tmpfile();
  if (!err_file) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw InputError("cannot create a temporary file for a child's stderr (is $TMPDIR or /tmp writable?)");
  }
  const int err_fd = ::fileno(err_file);
  ::fcntl(err_fd, F_SETFD, FD_CLOEXEC);
  const pid_t parent = ::getpid();
  // fork + exec rather than posix_spawn: the child must ask to be killed when its parent dies
  // (PR_SET_PDEATHSIG), so a `kill -9` of a sweep or check leaves no simulation running. Between fork
  // and exec only async-signal-safe calls.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    if (::dup2(out_pipe[1], STDOUT_FILENO) < 0 || ::dup2(err_fd, STDERR_FILENO) < 0) ::_exit(127);
    ::execv(self, argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    std::fclose(err_file);
    throw InternalError("cannot start a child fmsim process (fork failed)");
  }
  const int child_handle = register_child(pid);
  ChildResult result;
  result.out = read_all(out_pipe[0]);
  ::close(out_pipe[0]);
  // Wait without reaping, forget the child, then reap: a signal handler never kills a reused pid.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  forget_child(child_handle);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::fflush(err_file);
  ::lseek(err_fd, 0, SEEK_SET);
  result.err = read_all(err_fd);
  std::fclose(err_file);
  return result;
}

std::vector<std::string> json_result_arguments(const std::string& catalog_dir, const report::ScenarioJob& job,
                                               const std::vector<std::string>& extra_sets) {
  std::vector<std::string> arguments;
  if (!catalog_dir.empty()) arguments = {"--catalog", catalog_dir};
  arguments.insert(arguments.end(), {job.command, job.scenario.string(), "--json", "-"});
  for (const auto* sets : {&job.sets, &extra_sets}) {
    for (const auto& assignment : *sets) arguments.insert(arguments.end(), {"--set", assignment});
  }
  return arguments;
}

std::string error_message(const ChildResult& child) {
  const std::string& text = child.err;
  const std::size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "exit code " + std::to_string(child.exit_code) + ", nothing on stderr";
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
  std::string line = text.substr(start, end - start + 1);
  const std::string prefix = "fmsim: error: ";
  if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  return line;
}

}  // namespace fmsim::cli
