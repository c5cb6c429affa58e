#include "cleanup.hpp"

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace fmsim::cli {
namespace {

// Fixed slots, so the signal handler reads them without locks or allocation. A slot is claimed
// with a compare-and-swap of `state` (0 free, 1 being written, 2 ready).
constexpr std::size_t temporary_slots = 256, child_slots = 1024, max_path = 4096;

struct TemporarySlot {
  std::atomic<int> state{0};
  char path[max_path];
};
struct ChildSlot {
  std::atomic<pid_t> pid{0};
};

std::array<TemporarySlot, temporary_slots> temporaries;
std::array<ChildSlot, child_slots> children;

void on_signal(int signal) {
  for (auto& slot : temporaries) {
    if (slot.state.load() == 2) ::unlink(slot.path);
  }
  terminate_children();
  std::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

void install_cleanup_handlers() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    ::sigaction(signal, &action, nullptr);
  }
}

int register_temporary(const std::string& path) {
  if (path.size() >= max_path) return -1;
  for (std::size_t i = 0; i < temporaries.size(); ++i) {
    int expected = 0;
    if (!temporaries[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(temporaries[i].path, path.c_str(), path.size() + 1);
    temporaries[i].state.store(2);
    return static_cast<int>(i);
  }
  return -1;
}

void forget_temporary(int handle) {
  if (handle >= 0) temporaries[static_cast<std::size_t>(handle)].state.store(0);
}

int register_child(pid_t pid) {
  for (std::size_t i = 0; i < children.size(); ++i) {
    pid_t expected = 0;
    if (children[i].pid.compare_exchange_strong(expected, pid)) return static_cast<int>(i);
  }
  return -1;
}

void forget_child(int handle) {
  if (handle >= 0) children[static_cast<std::size_t>(handle)].pid.store(0);
}

void terminate_children() {
  for (auto& slot : children) {
    const pid_t pid = slot.pid.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
}

}  // namespace fmsim::cli
