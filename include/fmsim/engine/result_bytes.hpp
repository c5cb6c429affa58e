#pragma once
// Packing results of a forked simulation (run_isolated) into bytes and back: vectors of plain structs
// copied as bytes, which is safe because the parent and the child are the same binary.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "fmsim/common/error.hpp"

namespace fmsim::engine {

template <typename T>
void append_values(std::string& out, const std::vector<T>& values) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::uint64_t count = values.size();
  out.append(reinterpret_cast<const char*>(&count), sizeof count);
  // An empty vector's data() may be null, which memcpy and append must not be given (UBSan: nonnull-attribute).
  if (!values.empty()) out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

/// Reads what append_values wrote at `offset` and advances it. Throws InternalError when truncated.
template <typename T>
std::vector<T> take_values(const std::string& in, std::size_t& offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::uint64_t count = 0;
  if (offset + sizeof count > in.size()) throw InternalError("engine: truncated simulation result");
  std::memcpy(&count, in.data() + offset, sizeof count);
  offset += sizeof count;
  if (offset + count * sizeof(T) > in.size()) throw InternalError("engine: truncated simulation result");
  std::vector<T> values(count);
  if (count > 0) std::memcpy(static_cast<void*>(values.data()), in.data() + offset, count * sizeof(T));
  offset += count * sizeof(T);
  return values;
}

}  // namespace fmsim::engine
