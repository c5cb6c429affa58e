#include "child_process.hpp"

#include <cstdio>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmsim/common/error.hpp"
#include "fmsim/common/fd_io.hpp"

extern char** environ;

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
  int out_pipe[2];
  if (::pipe(out_pipe) != 0) throw InternalError("pipe() failed");
  std::FILE* err_file = std::tmpfile();
  if (!err_file) throw InternalError("cannot create a temporary file for a child's stderr");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, ::fileno(err_file), STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, self, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    std::fclose(err_file);
    throw InternalError("cannot start a child fmsim process");
  }
  ChildResult result;
  result.out = read_all(out_pipe[0]);
  ::close(out_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::fflush(err_file);
  ::lseek(::fileno(err_file), 0, SEEK_SET);
  result.err = read_all(::fileno(err_file));
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
