#pragma once
#include <string>

namespace fmsim::cli {

/// Writes `content` to `path`. "-" and /dev/stdout are stdout, /dev/stderr and /dev/fd/N those
/// descriptors; an existing path that is not a regular file (/dev/null, /dev/full, a named pipe) is
/// written in place, as a stream, never replaced. A regular file
/// is written to a unique temporary file beside it (fsynced) and only renamed into place by
/// commit_outputs(), once the whole command has succeeded: a failed or interrupted run leaves neither a
/// partial file nor the first of several outputs. A symbolic link is followed (its target is replaced).
/// Throws InputError, naming the path and the reason (ENOSPC, a missing directory...), if it cannot write.
void write_output(const std::string& path, const std::string& content);

/// Renames every staged output into place (main, after a command returned 0 or 1).
void commit_outputs();

/// Removes every staged temporary file (main, after a command failed).
void discard_outputs() noexcept;

/// Flushes stdout; throws InputError when anything written to it was lost (a full disk, a closed pipe).
void flush_stdout();

/// The descriptor a path names: 1 for "-" and /dev/stdout, 2 for /dev/stderr, N for /dev/fd/N and
/// /proc/self/fd/N; -1 for any other path.
int named_descriptor(const std::string& path);

/// True when write_output streams to `path` in place: a named descriptor, or an existing path that is
/// neither a regular file nor a directory (a device, a named pipe, a socket).
bool is_stream_output(const std::string& path);

/// The file an output path names, through symbolic links (a dangling link names the file to create).
std::string resolve_output_path(const std::string& path);

/// "path: what failed: strerror(errno)".
std::string io_error(const std::string& path, const std::string& what, int error_number);

}  // namespace fmsim::cli
