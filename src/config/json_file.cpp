#include "fmsim/config/json_file.hpp"

#include <cstdint>
#include <fstream>
#include <sstream>

#include "fmsim/common/error.hpp"

namespace fmsim::config {
namespace {

/// Larger JSON inputs than this would need several times their size in memory once parsed.
constexpr std::size_t kMaxJsonBytes = std::size_t{1} << 30;

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

/// Refuses JSON nested deeper than any fmsim file needs before parsing it: the parser handles any depth,
/// but copying, merging and printing such a document recurse once per level and overflow the stack.
void check_nesting(const std::string& text, const std::string& origin) {
  constexpr int kMaxDepth = 256;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        auto [line, column] = line_and_column(text, i);
        throw InputError(origin + ":" + std::to_string(line) + ":" + std::to_string(column) +
                         ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (byte < 0x80) length = 1, code = byte;
    else if ((byte & 0xE0) == 0xC0) length = 2, code = byte & 0x1F;
    else if ((byte & 0xF0) == 0xE0) length = 3, code = byte & 0x0F;
    else if ((byte & 0xF8) == 0xF0) length = 4, code = byte & 0x07;
    else return false;
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    static constexpr std::uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return false;
    i += length;
  }
  return true;
}

void require_regular_file(const std::filesystem::path& path, const std::string& what) {
  const std::string name = path.string();
  // Over-long names (thousands of characters) are cut in the message.
  const std::string label = !is_valid_utf8(name) ? "a file" : name.size() <= 200 ? name : name.substr(0, 80) + "...";
  const std::string purpose = what.empty() ? "" : " (" + what + ")";
  if (name.empty()) throw InputError("an empty file name" + purpose);
  if (!is_valid_utf8(name)) throw InputError(label + purpose + ": its name is not valid UTF-8; rename the file");
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error) throw InputError(label + purpose + ": cannot open file for reading (" + error.message() + ")");
  if (std::filesystem::is_directory(status)) throw InputError(label + purpose + ": is a directory, expected a file");
  if (!std::filesystem::is_regular_file(status) && !std::filesystem::is_fifo(status) &&
      !std::filesystem::is_character_file(status)) {
    throw InputError(label + purpose + ": not a regular file");
  }
}

JsonFile parse_json_text(const std::string& text, const std::string& origin) {
  check_nesting(text, origin);
  try {
    return JsonFile{origin, nlohmann::json::parse(text)};
  } catch (const nlohmann::json::out_of_range& error) {
    // A number beyond double range ("1e999"): nlohmann reports it as out_of_range, not as a parse error.
    std::string reason = error.what();
    auto pos = reason.find("number overflow");
    if (pos != std::string::npos) reason = reason.substr(pos);
    throw InputError(origin + ": malformed JSON (" + reason + ": a number out of range)");
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
  require_regular_file(path);
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);  // fails (harmlessly) for pipes and devices
  if (!error && size > kMaxJsonBytes) {
    throw InputError(path.string() + ": " + std::to_string(size) + " bytes: larger than any input fmsim reads (at most 1 GiB)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open file for reading");
  // Pipes and devices have no size up front: read in blocks and stop past the limit (/dev/zero).
  std::string text;
  std::vector<char> block(1 << 16);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxJsonBytes) {
      throw InputError(path.string() + ": more than " + std::to_string(static_cast<long long>(kMaxJsonBytes)) +
                       " bytes: larger than any input fmsim reads (at most 1 GiB)");
    }
  }
  if (in.bad()) throw InputError(path.string() + ": error while reading file");
  return parse_json_text(text, path.string());
}

}  // namespace fmsim::config
