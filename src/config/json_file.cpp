#include "fmsim/config/json_file.hpp"

#include <fstream>
#include <sstream>

#include "fmsim/common/error.hpp"

namespace fmsim::config {
namespace {

/// Converts a byte offset into 1-based line and column numbers.
std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

JsonFile parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return JsonFile{origin, nlohmann::json::parse(text)};
  } catch (const nlohmann::json::parse_error& error) {
    // nlohmann reports the byte just past the offending token; point at the token itself.
    std::size_t offset = error.byte > 0 ? error.byte - 1 : 0;
    auto [line, column] = line_and_column(text, offset);
    std::string reason = error.what();
    auto pos = reason.find("parse error");
    if (pos != std::string::npos) reason = reason.substr(pos);
    throw InputError(origin + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": malformed JSON (" + reason + ")");
  }
}

JsonFile load_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path.string() + ": error while reading file");
  return parse_json_text(buffer.str(), path.string());
}

}  // namespace fmsim::config
