#pragma once
// A guard in front of yaml-cpp 0.7 (Debian bookworm's): it never returns, allocating as it goes, on some
// malformed YAML (found by fuzz_kueue): a ',' where a token starts outside a flow collection ("," starting a
// line, `"k" ,` or `[a] ,` at a document's top level, `l\n#\n,`), and a quoted value followed by more text
// on its line (`"a" b` with a `?` line later). Neither is valid YAML (a plain scalar cannot start with a
// flow indicator; after a quoted value, [...], {...} or an alias only ':' or a comment may follow on its
// line), so the file is refused, naming its line and column, before it reaches the parser; so is an
// explicit mapping key ("? " outside [...] and {...}: a root scalar, tagged, anchored or quoted, followed by
// a "?" line loops too, and Kubernetes manifests never need one), a quoted key over several lines
// (`'':'a` then `':',x'` allocates without bound; YAML allows implicit keys on one line only), and a control
// character (NUL and the other C0 codes but tab, line feed and carriage return, and DEL), which YAML does
// not allow in a stream and which hid a ',' from the guard (`\0\0\0,` hangs yaml-cpp too).
#include <string>

namespace fmsim::config {

/// Throws InputError("FILE:LINE:COLUMN: ...") where `text` has, outside [...] and {...}, a ',' at the start
/// of a token (a line's start, after an anchor, a tag or a block indicator "- ", ": "), an explicit key
/// ("? "), or anything
/// but ':' or a comment after a quoted value, a closed [...] or {...}, or an alias on the same line. Quotes
/// (across lines), comments and block scalars (| and >) are read past. A ',' inside a plain scalar
/// (`a: x, y`) is valid and left to the parser, but a plain scalar's continuation line may not start with
/// an indicator (, ! & * ? | > % @ `): valid YAML that yaml-cpp 0.7 scans as a token and can loop on.
/// Line breaks are read as YAML reads them (CR LF and a lone CR too, normalize_yaml_line_breaks).
void refuse_misplaced_yaml_comma(const std::string& text, const std::string& file);

/// `text` with its line breaks as YAML reads them (YAML 1.2, 5.4: CR LF, or a lone CR) turned into LF:
/// yaml-cpp 0.7 does not take a lone CR as a line break and loops on `&a\rG,` (found by fuzz_kueue); the
/// guard and the parser then see the same lines.
std::string normalize_yaml_line_breaks(const std::string& text);

}  // namespace fmsim::config
