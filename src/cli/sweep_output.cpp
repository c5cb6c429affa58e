#include "sweep_output.hpp"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cleanup.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/common/fd_io.hpp"

namespace fmsim::cli {
namespace {

namespace fs = std::filesystem;

std::string read_whole(int fd) {
  std::string data;
  char buffer[65536];
  for (off_t offset = 0;;) {
    const ssize_t got = ::pread(fd, buffer, sizeof buffer, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return data;
    data.append(buffer, static_cast<std::size_t>(got));
    offset += got;
  }
}

/// Every sweep line starts with its "index" (nlohmann::json sorts keys; "index" comes first), so a cut
/// line does too; any other unreadable text means the file is something else.
bool looks_like_sweep_line(const std::string& text) {
  const std::size_t key = text.find_first_not_of(" \t", 1);
  return !text.empty() && text[0] == '{' && key != std::string::npos && text.compare(key, 7, "\"index\"") == 0;
}

}  // namespace

SweepOutput::SweepOutput(const std::string& path, const report::SweepSpec& spec) : path_(path), file_(resolve_output_path(path)) {
  std::error_code error;
  if (fs::is_directory(path, error)) throw InputError(path + ": is a directory (--out expects a JSON Lines file)");
  if (is_stream_output(path)) {
    stream_ = true;
    fd_ = named_descriptor(path);
    if (fd_ < 0) {
      fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd_ < 0) throw InputError(io_error(path, "cannot open for writing", errno));
      owned_ = true;
    }
    return;
  }
  open_locked();
  read_back(spec);
}

SweepOutput::~SweepOutput() {
  if (owned_ && fd_ >= 0) ::close(fd_);  // closing releases the lock
}

void SweepOutput::open_locked() {
  const fs::path target = file_;
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    throw InputError(path_ + ": cannot write: the directory " + directory.string() + " does not exist");
  }
  // Lock the file at the path. The resume rewrite replaces the file by a renamed (locked) one, so a
  // lock won on a file that is no longer at the path is dropped and the path opened again.
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int fd = ::open(file_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0) throw InputError(io_error(path_, "cannot open for writing", errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error_number = errno;
      ::close(fd);
      if (error_number == EWOULDBLOCK) {
        throw InputError(path_ + ": another fmsim sweep is writing this file (it is locked); wait for it to finish or choose another --out");
      }
      throw InputError(io_error(path_, "cannot lock", error_number));
    }
    struct stat opened {}, named {};
    if (::fstat(fd, &opened) == 0 && ::stat(file_.c_str(), &named) == 0 && opened.st_dev == named.st_dev &&
        opened.st_ino == named.st_ino) {
      fd_ = fd;
      owned_ = true;
      break;
    }
    ::close(fd);
  }
  if (fd_ < 0) throw InputError(path_ + ": cannot lock (the file keeps being replaced by another process)");
  // Temporary files of a rewrite killed before its rename: nobody else writes them while we hold the lock.
  const std::string prefix = target.filename().string() + ".tmp.";
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == prefix.size() + 6 && name.rfind(prefix, 0) == 0) fs::remove(entry.path(), error);
  }
}

void SweepOutput::read_back(const report::SweepSpec& spec) {
  const std::string text = read_whole(fd_);
  std::string kept;
  bool changed = false;
  std::size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    const std::size_t newline = text.find('\n', start);
    const bool complete = newline != std::string::npos;
    const std::string line = text.substr(start, complete ? newline - start : std::string::npos);
    start = complete ? newline + 1 : text.size();
    if (line.empty()) {
      changed = true;
      continue;
    }
    const nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
    if (!complete && doc.is_discarded() && looks_like_sweep_line(line)) {
      changed = true;  // the last line, cut short by a kill: its point is redone
      break;
    }
    const std::string where = path_ + ": line " + std::to_string(number);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("index") || !doc["index"].is_number_unsigned() || !doc.contains("point")) {
      throw InputError(where + " is not a line of a sweep (expected JSON with \"index\" and \"point\"); the file is not the output of " +
                       spec.file + ": remove it or choose another --out (nothing was changed)");
    }
    const auto index = doc["index"].get<std::size_t>();
    if (index >= spec.points.size() || doc["point"] != spec.points[index]) {
      throw InputError(where + " holds point " + std::to_string(index) + " = " + doc["point"].dump() + ", which is not point " +
                       std::to_string(index) + " of " + spec.file +
                       (index < spec.points.size() ? " (" + spec.points[index].dump() + ")" : "") +
                       "; the file is from another sweep: remove it or choose another --out (nothing was changed)");
    }
    if (!done_.insert(index).second) {
      changed = true;  // a point written twice (by an older fmsim): kept once
      continue;
    }
    kept += line + "\n";
    if (!complete) changed = true;  // a whole last line without its newline
  }
  if (changed) rewrite(kept);
}

void SweepOutput::rewrite(const std::string& kept) {
  std::string temporary = file_ + ".tmp.XXXXXX";
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC | O_APPEND);
  if (fd < 0) throw InputError(io_error(path_, "cannot create a temporary file beside it", errno));
  const int handle = register_temporary(temporary);
  struct stat existing {};
  if (::fstat(fd_, &existing) == 0) ::fchmod(fd, existing.st_mode & 07777);
  ::flock(fd, LOCK_EX | LOCK_NB);  // new and unnamed until the rename: always granted
  bool ok = write_all(fd, kept.data(), kept.size());
  int error_number = errno;
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    error_number = errno;
  }
  if (ok && ::rename(temporary.c_str(), file_.c_str()) != 0) {
    ok = false;
    error_number = errno;
  }
  if (!ok) {
    ::close(fd);
    ::unlink(temporary.c_str());
    forget_temporary(handle);
    throw InputError(io_error(path_, "cannot rewrite without its cut last line", error_number));
  }
  forget_temporary(handle);
  const fs::path directory = fs::path(file_).has_parent_path() ? fs::path(file_).parent_path() : fs::path(".");
  const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd >= 0) {
    ::fsync(directory_fd);  // the rename itself survives a crash
    ::close(directory_fd);
  }
  ::close(fd_);
  fd_ = fd;
}

void SweepOutput::append(const std::string& line) {
  const std::string text = line + "\n";
  off_t before = -1;
  if (!stream_) before = ::lseek(fd_, 0, SEEK_END);
  errno = 0;
  if (write_all(fd_, text.data(), text.size())) return;
  const int error_number = errno != 0 ? errno : EIO;
  if (before >= 0 && ::ftruncate(fd_, before) != 0) {
    // Could not undo: the cut line stays and is dropped by the next resume.
  }
  throw InputError(io_error(stream_ ? (path_ == "-" ? std::string("standard output") : path_) : path_, "write failed", error_number) +
                   (stream_ ? "" : " (the finished points are kept; run the same command again to resume)"));
}

}  // namespace fmsim::cli
