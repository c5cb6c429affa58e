#include "fmsim/common/error.hpp"

namespace fmsim {

std::string quote_for_message(const std::string& text) {
  constexpr std::size_t kMaxChars = 80;
  if (text.size() <= kMaxChars) return "'" + text + "'";
  return "'" + text.substr(0, kMaxChars) + "...'";
}

}  // namespace fmsim
