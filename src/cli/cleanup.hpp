#pragma once
// What a dying fmsim tidies up: temporary output files are removed and child fmsim processes are
// stopped when it is interrupted (SIGINT, SIGTERM, SIGHUP, SIGPIPE). Children also die with their
// parent on SIGKILL (child_process.cpp sets PR_SET_PDEATHSIG), which no handler can catch.
#include <string>
#include <sys/types.h>

namespace fmsim::cli {

/// Installs the signal handlers; each removes the registered temporary files, sends SIGTERM to the
/// registered children and then dies of the signal it caught (so the exit status tells the signal).
void install_cleanup_handlers();

/// Registers a temporary file to remove if a signal ends the process; returns a handle for
/// forget_temporary (-1 when every slot is taken: the file is then only removed on ordinary failures).
int register_temporary(const std::string& path);
void forget_temporary(int handle);

/// Registers a running child process; returns a handle for forget_child.
int register_child(pid_t pid);
void forget_child(int handle);

/// Sends SIGTERM to every registered child (a sweep stopping early after a write error).
void terminate_children();

}  // namespace fmsim::cli
