// Writing results: streams to stdout and devices, staged temporary files renamed into place for
// regular files (see output_file.hpp).
#include "fmsim/cli/output_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cleanup.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/common/fd_io.hpp"

namespace fmsim::cli {
namespace {

namespace fs = std::filesystem;

struct Staged {
  std::string temporary, target, shown;  ///< shown: the path as the user gave it
  int handle = -1;                       ///< cleanup.hpp registration
};

std::mutex staged_lock;
std::vector<Staged> staged;

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

int named_descriptor(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!starts_with(path, prefix) || path.size() == prefix.size() || path.size() > prefix.size() + 6) continue;
    if (path.find_first_not_of("0123456789", prefix.size()) != std::string::npos) continue;
    return std::stoi(path.substr(prefix.size()));
  }
  return -1;
}

// Devices, pipes and sockets are written in place: replacing them by a renamed file would destroy
// /dev/null (as root) or cut the link to a pipe.
bool is_stream_output(const std::string& path) {
  if (named_descriptor(path) >= 0) return true;
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode);
}

namespace {

void write_stream(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(io_error(path, "cannot open for writing", errno));
  const bool written = write_all(fd, content.data(), content.size());
  const int error_number = errno;
  ::close(fd);
  if (!written) throw InputError(io_error(path, "write failed", error_number));
}

void write_stdout(const std::string& content) {
  errno = 0;
  std::cout << content << std::flush;
  if (!std::cout) throw InputError(io_error("standard output", "write failed", errno != 0 ? errno : EIO));
}

void stage_file(const std::string& path, const std::string& content) {
  const fs::path target = resolve_output_path(path);
  std::error_code error;
  if (fs::is_directory(target, error)) throw InputError(path + ": is a directory (expected a file name)");
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(directory, error)) {
    throw InputError(path + ": cannot write: the directory " + directory.string() + " does not exist");
  }
  std::string temporary = target.string() + ".tmp.XXXXXX";
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) throw InputError(io_error(path, "cannot create a file in " + directory.string(), errno));
  const int handle = register_temporary(temporary);
  // mkstemp creates mode 0600; an output gets what a plain create would (0666 less the umask), or
  // keeps the mode of the file it replaces.
  struct stat existing {};
  mode_t mode = 0;
  if (::stat(target.c_str(), &existing) == 0) {
    mode = existing.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  const bool written = write_all(fd, content.data(), content.size());
  int error_number = errno;
  const bool synced = written && ::fsync(fd) == 0;
  if (written && !synced) error_number = errno;
  const bool closed = ::close(fd) == 0;
  if (synced && !closed) error_number = errno;
  if (!written || !synced || !closed) {
    ::unlink(temporary.c_str());
    forget_temporary(handle);
    throw InputError(io_error(path, "write failed", error_number));
  }
  std::lock_guard<std::mutex> guard(staged_lock);
  staged.push_back({temporary, target.string(), path, handle});
}

}  // namespace

hardware::Catalog load_catalog(const GlobalOptions& globals) {
  return hardware::Catalog::load(globals.catalog_dir.empty() ? hardware::Catalog::default_directory()
                                                             : std::filesystem::path(globals.catalog_dir));
}

std::string resolve_output_path(const std::string& path) {
  std::error_code error;
  fs::path target = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(target, error)); ++hops) {
    const fs::path next = fs::read_symlink(target, error);
    if (error) break;
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target.string();
}

std::string io_error(const std::string& path, const std::string& what, int error_number) {
  return path + ": " + what + ": " + std::strerror(error_number);
}

void write_output(const std::string& path, const std::string& content) {
  const int descriptor = named_descriptor(path);
  if (descriptor == STDOUT_FILENO) {
    write_stdout(content);  // through std::cout, in order with the summaries printed there
  } else if (descriptor >= 0) {
    std::cout.flush();
    errno = 0;
    if (!write_all(descriptor, content.data(), content.size())) throw InputError(io_error(path, "write failed", errno != 0 ? errno : EIO));
  } else if (is_stream_output(path)) {
    write_stream(path, content);
  } else {
    stage_file(path, content);
  }
}

void commit_outputs() {
  std::vector<Staged> files;
  {
    std::lock_guard<std::mutex> guard(staged_lock);
    files.swap(staged);
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (std::rename(files[i].temporary.c_str(), files[i].target.c_str()) == 0) {
      forget_temporary(files[i].handle);
      continue;
    }
    const int error_number = errno;
    for (std::size_t j = i; j < files.size(); ++j) {
      ::unlink(files[j].temporary.c_str());
      forget_temporary(files[j].handle);
    }
    throw InputError(io_error(files[i].shown, "cannot move the finished file into place", error_number));
  }
}

void discard_outputs() noexcept {
  std::lock_guard<std::mutex> guard(staged_lock);
  for (const auto& file : staged) {
    ::unlink(file.temporary.c_str());
    forget_temporary(file.handle);
  }
  staged.clear();
}

void flush_stdout() {
  std::cout.flush();
  errno = 0;
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw InputError(io_error("standard output", "write failed", errno != 0 ? errno : EIO));
  }
}

}  // namespace fmsim::cli
