#pragma once
// Reading JSON files with errors that name the file, line and column.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fmsim::config {

/// A parsed JSON document and the file it came from (used to name the file in later errors).
struct JsonFile {
  std::string path;
  nlohmann::json root;
};

/// Reads and parses a JSON file. Throws InputError naming the file (and the line and column of a
/// syntax error) when it cannot be read or is not valid JSON.
JsonFile load_json_file(const std::filesystem::path& path);

/// Whether `text` is well-formed UTF-8 (JSON output and messages need it: names, values, file names).
bool is_valid_utf8(std::string_view text);

/// Throws InputError unless `path` names a readable regular file (not a directory, not missing, a name
/// of valid UTF-8 that the system accepts); `what` says what the file is for ("the sweep file").
void require_regular_file(const std::filesystem::path& path, const std::string& what = "");

/// Parses JSON text that came from `origin` (a file name or "--set"), with the same errors.
JsonFile parse_json_text(const std::string& text, const std::string& origin);

}  // namespace fmsim::config
