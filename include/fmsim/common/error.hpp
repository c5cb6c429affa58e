#pragma once
// Typed errors. Library code throws these; only the CLI catches them and maps them to exit codes.
#include <stdexcept>
#include <string>

namespace fmsim {

/// Bad input from a user: a file, key or value that is wrong, or a configuration that cannot exist.
/// The CLI prints what() on one line and exits with code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// A problem inside fmsim itself (a violated invariant). The CLI exits with code 3.
class InternalError : public std::runtime_error {
 public:
  explicit InternalError(const std::string& message) : std::runtime_error(message) {}
};

/// Quote a string for an error message, truncating very long values.
std::string quote_for_message(const std::string& text);

}  // namespace fmsim
