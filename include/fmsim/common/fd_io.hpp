#pragma once
// Whole-buffer reads and writes on POSIX file descriptors (pipes to child processes).
#include <cerrno>
#include <string>
#include <unistd.h>

namespace fmsim {

/// Writes all of `data`; false when the descriptor fails first.
inline bool write_all(int fd, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;  // errno tells why (ENOSPC, EPIPE, EIO...)
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

/// Reads until end of file.
inline std::string read_all(int fd) {
  std::string data;
  char buffer[65536];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return data;
    data.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace fmsim
