// The guard in front of yaml-cpp 0.7 (yaml_guard.hpp). One pass over the text, line by line, with the state
// YAML carries across lines: the open quote, the depth of [ and {, a block or plain scalar that goes on, and
// whether the document's top level already holds a value.
#include "fmsim/config/yaml_guard.hpp"

#include <cstddef>
#include <cctype>
#include <cstdio>
#include <string_view>

#include "fmsim/common/error.hpp"

namespace fmsim::config {

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool flow_indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }
bool tag_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || std::string_view("%-#;/?:@&=+$_.!~*'()").find(c) != std::string_view::npos;
}

struct ScanState {
  int depth = 0;           ///< open [ and { outside quotes and comments
  char quote = 0;          ///< the open quote, if a quoted scalar goes on past the line
  bool in_block = false;   ///< a block scalar's content lines run while indented past block_owner
  int block_owner = -1;    ///< the column of the key or entry that owns the block scalar (-1: the root)
  bool in_plain = false;   ///< a plain scalar at depth 0 may go on at the next line indented past plain_owner
  int plain_owner = -1;
  bool root_value = false; ///< the document's top level already holds a scalar or flow value (not a key)
};

enum class Misplaced { none, comma, after_value, explicit_key, continuation, second_root, multiline_key };

struct Finding {
  std::size_t column = 0;
  Misplaced what = Misplaced::none;
};

/// Reads one line; returns what it found misplaced and where, or Misplaced::none.
Finding scan_line(const std::string& line, ScanState& s) {
  std::size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;
  const bool empty = line.find_first_not_of(" \t\r") == std::string::npos;
  if (s.in_block) {
    // A root block scalar's content counts only indented (yaml-cpp 0.7 loops on `>` then `,` at the margin).
    if (empty || (static_cast<int>(indent) > s.block_owner && indent > 0)) return {};  // block scalar content
    s.in_block = false;
  }
  if (s.in_plain && s.quote == 0 && s.depth == 0) {
    // A multi-line plain scalar: a line indented past its owner goes on with it (YAML 1.2, ns-plain-char
    // allows ',', quotes and brackets there); an empty line folds into it; a comment line ends it.
    // A root scalar's lines go on only indented (a root "m" then "?" at the margin loops yaml-cpp 0.7).
    if (empty) return {};
    if (indent > 0 && static_cast<int>(indent) > s.plain_owner && line[indent] != '#') {
      // Valid YAML, but yaml-cpp 0.7 scans an indicator there as a token and can loop (` ! y` then ` ,` or
      // ` !,`): a continuation may not start with one (quote such a value instead).
      if (std::string_view(",!&*?|>%@`").find(line[indent]) != std::string_view::npos) return {indent, Misplaced::continuation};
      // The rest of the line is the scalar's; a comment ends it, and the scalar with it.
      if (line.find(" #") != std::string::npos || line.find("\t#") != std::string::npos) s.in_plain = false;
      return {};
    }
  }
  s.in_plain = false;
  std::size_t k = 0;
  const bool at_root = s.quote == 0 && s.depth == 0;  // the line starts outside quotes and flow collections
  if (at_root) {
    if (line.rfind('%', 0) == 0) return {};  // a directive
    if ((line.rfind("---", 0) == 0 || line.rfind("...", 0) == 0) && (line.size() == 3 || blank(line[3]))) {
      k = 3;
      s.root_value = false;  // a new document
    } else if (s.root_value && indent == 0 && !empty && line[0] != '#') {
      // A second node at a document's top level: invalid YAML, and yaml-cpp 0.7 loops on some (`f` then `[`).
      return {0, Misplaced::second_root};
    }
  }
  bool in_plain = false, commented = false;
  bool value_started = false;  // a scalar, flow collection or alias began on this line
  bool closed = false;      // a quoted value, [...], {...} or an alias just ended at depth 0
  const bool quote_goes_on = s.quote != 0 && s.depth == 0;  // a quoted scalar from an earlier line goes on
  bool multiline_closed = false;  // ... and ended on this line
  int owner = -1;           // the column of the key (before ": ") or entry ("- ") that owns what follows
  int token_col = static_cast<int>(indent);  // where the current token started
  for (; k < line.size(); ++k) {
    const char c = line[k];
    const bool next_blank = k + 1 >= line.size() || blank(line[k + 1]);
    if (s.quote) {
      if (s.quote == '"' && c == '\\') ++k;  // an escape: the next character is taken as it is
      else if (s.quote == '\'' && c == '\'' && k + 1 < line.size() && line[k + 1] == '\'') ++k;  // '' in '...'
      else if (c == s.quote) s.quote = 0, closed = s.depth == 0, multiline_closed = closed && quote_goes_on;
      continue;
    }
    if (blank(c)) continue;
    if (c == '#' && (k == 0 || blank(line[k - 1]))) {  // a comment (it ends a plain scalar)
      commented = true;
      break;
    }
    if (s.depth > 0) {
      // A quote opens a quoted scalar only where a token starts (`[don't]` is a plain scalar).
      const bool starts = k == 0 || blank(line[k - 1]) || std::string_view("[{,:").find(line[k - 1]) != std::string_view::npos;
      if ((c == '"' || c == '\'') && starts) s.quote = c;
      else if (c == '[' || c == '{') ++s.depth;
      else if (c == ']' || c == '}') {
        if (--s.depth == 0) in_plain = false, closed = true;
      }
      continue;
    }
    if (closed) {  // only a ':' (the value was a key) may follow on its line: `"k" ,`, `"a" b` then `?` loop
      if (c != ':') return {k, c == ',' ? Misplaced::comma : Misplaced::after_value};
      // A quoted scalar over several lines followed by ':' is an implicit key over several lines, which YAML
      // does not allow (1.2, 7.4: an implicit key is restricted to one line); yaml-cpp 0.7 allocates
      // without bound on `'':'a` then `':',x'` (found by fuzz_kueue).
      if (multiline_closed) return {k, Misplaced::multiline_key};
      closed = false;
      owner = token_col;
      continue;
    }
    if (in_plain) {  // a plain scalar runs to ": " or " #"
      if (c == ':' && next_blank) in_plain = false, owner = token_col;
      continue;
    }
    // Here a token starts.
    if (c == ',') return {k, Misplaced::comma};
    token_col = static_cast<int>(k);
    if (c == '"' || c == '\'') {
      s.quote = c;
      value_started = true;
    } else if (c == '[' || c == '{') {
      ++s.depth;
      value_started = true;
    } else if (c == '!') {  // a tag: its name is URI characters (YAML 1.2, ns-tag-char), so `!""Z` is a tag, then `""`
      while (k + 1 < line.size() && tag_char(line[k + 1])) ++k;
    } else if (c == '&' || c == '*') {  // an anchor or alias: its name ends at a blank or flow indicator
      while (k + 1 < line.size() && !blank(line[k + 1]) && !flow_indicator(line[k + 1])) ++k;
      closed = c == '*';  // an alias is a whole value
      value_started = value_started || closed;
    } else if (c == '?' && next_blank) {
      return {k, Misplaced::explicit_key};  // in every yaml-cpp 0.7 loop fuzz_kueue found after a root scalar
    } else if (c == '-' && next_blank) {
      owner = static_cast<int>(k);  // a sequence entry owns what follows it
    } else if (c == ':' && next_blank) {
      // an empty key's value follows
    } else if (c == '|' || c == '>') {
      s.in_block = true;
      s.block_owner = owner;
      return {};  // the header's modifiers and comment; content lines follow
    } else if (c == ']' || c == '}') {
      // unbalanced: yaml-cpp reports it
    } else {
      in_plain = true;
      value_started = true;
    }
  }
  // A value (not a key, not an entry) that started at the margin of a document's top level fills it.
  if (at_root && indent == 0 && !empty && owner < 0 && value_started) s.root_value = true;
  if (in_plain && !commented && s.quote == 0 && s.depth == 0) {  // it may go on at the next line
    s.in_plain = true;
    s.plain_owner = owner;
  }
  return {};
}

}  // namespace

std::string normalize_yaml_line_breaks(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t k = 0; k < text.size(); ++k) {
    if (text[k] != '\r') {
      out += text[k];
      continue;
    }
    out += '\n';
    if (k + 1 < text.size() && text[k + 1] == '\n') ++k;  // CR LF: one break
  }
  return out;
}

void refuse_misplaced_yaml_comma(const std::string& text, const std::string& file) {
  const std::string yaml = text.find('\r') == std::string::npos ? std::string() : normalize_yaml_line_breaks(text);
  const std::string& lines = yaml.empty() ? text : yaml;  // line breaks as YAML reads them
  ScanState state;
  std::size_t start = 0;
  int number = 0;
  while (start < lines.size()) {
    ++number;
    std::size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    std::string line = lines.substr(start, end - start);
    start = end + 1;
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line = line.substr(3);
    for (std::size_t k = 0; k < line.size(); ++k) {  // YAML streams hold printable characters only (YAML 1.2, 5.1)
      const auto u = static_cast<unsigned char>(line[k]);
      if ((u < 0x20 && u != '\t' && u != '\r') || u == 0x7F) {
        char code[8];
        std::snprintf(code, sizeof code, "0x%02X", u);
        throw InputError(file + ":" + std::to_string(number) + ":" + std::to_string(k + 1) + ": control character " + code +
                         ": YAML allows printable characters only (is this a binary file?)");
      }
    }
    const Finding found = scan_line(line, state);
    if (found.what == Misplaced::none) continue;
    const std::string where = file + ":" + std::to_string(number) + ":" + std::to_string(found.column + 1) + ": ";
    const std::string c(1, line[found.column]);
    switch (found.what) {
      case Misplaced::comma: throw InputError(where + "a ',' cannot start a value outside [...] or {...} in YAML");
      case Misplaced::after_value:
        throw InputError(where + "'" + c + "' after a quoted value, [...], {...} or an alias: only ':' or a comment may follow it on its line in YAML");
      case Misplaced::explicit_key:
        throw InputError(where + "an explicit mapping key ('? ') is not read here: write key: value (yaml-cpp 0.7 can loop on it)");
      case Misplaced::continuation:
        throw InputError(where + "'" + c + "' starts a line that goes on a plain value: quote the value (yaml-cpp 0.7 can loop on it)");
      case Misplaced::second_root:
        throw InputError(where + "a second value at the top level of a document (after a scalar or [...]/{...} there): separate documents with ---");
      case Misplaced::multiline_key:
        throw InputError(where + "':' after a quoted scalar that began on an earlier line: a mapping key must be on one line in YAML");
      case Misplaced::none: break;
    }
  }
}

}  // namespace fmsim::config
