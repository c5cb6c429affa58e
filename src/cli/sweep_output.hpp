#pragma once
// The output of `fmsim sweep`: one JSON line per point, appended as points finish.
//  - A file --out is locked (flock) for the whole sweep: a second sweep on it is refused, never mixed in.
//  - An existing file is resumed: its finished points are skipped. Only this sweep's lines are
//    accepted (anything else is refused, the file untouched); a last line cut short by a kill is
//    dropped and repeated points kept once, by an atomic rewrite (temporary file, fsync, rename).
//  - A failed write (a full disk) is undone to the last whole line and reported; the sweep stops.
//  - "-", devices and pipes are written as streams (no lock, no resume).
#include <cstddef>
#include <set>
#include <string>

#include "fmsim/report/sweep_spec.hpp"

namespace fmsim::cli {

class SweepOutput {
 public:
  /// Opens (and locks, and reads back) `path` for `spec`. Throws InputError naming the file.
  SweepOutput(const std::string& path, const report::SweepSpec& spec);
  ~SweepOutput();
  SweepOutput(const SweepOutput&) = delete;
  SweepOutput& operator=(const SweepOutput&) = delete;

  /// The indices of the points already in the file.
  const std::set<std::size_t>& done() const { return done_; }

  /// Appends one line (a newline is added). Not thread-safe: callers serialize. Throws InputError.
  void append(const std::string& line);

 private:
  void open_locked();
  void read_back(const report::SweepSpec& spec);
  void rewrite(const std::string& kept);

  std::string path_;      ///< as given (messages)
  std::string file_;      ///< through symbolic links: what is locked, read and replaced
  int fd_ = -1;
  bool owned_ = false;   ///< fd_ was opened here (not stdout)
  bool stream_ = false;
  std::set<std::size_t> done_;
};

}  // namespace fmsim::cli
