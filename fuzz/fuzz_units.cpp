// Fuzz target: unit strings ("400GBps", "1.5TiB", "936ns", "989.5TFLOPS", "40/s") and nccl-tests sizes
// ("128K"). The first byte picks the parser; the rest is the text. A value that parses must be a finite
// number >= 0, and the summaries' formatting of it must not fail.
#include <cmath>
#include <stdexcept>

#include "fmsim/units/format.hpp"
#include "fmsim/units/quantity.hpp"
#include "fuzz_support.hpp"

using fmsim::units::Dimension;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const int which = data[0] % 6;
  double value = 0;
  try {
    value = which == 5 ? fmsim::units::parse_size_argument(text) : fmsim::units::parse(text, static_cast<Dimension>(which));
  } catch (const std::invalid_argument&) {
    return 0;  // the documented rejection (ObjectReader turns it into an InputError naming the key)
  }
  if (!std::isfinite(value) || value < 0) {
    std::fprintf(stderr, "accepted '%.*s' as %g\n", static_cast<int>(text.size()), text.data(), value);
    std::abort();
  }
  (void)fmsim::units::format_bytes(value);
  (void)fmsim::units::format_bandwidth(value);
  (void)fmsim::units::format_time(value);
  (void)fmsim::units::format_flop_rate(value);
  (void)fmsim::units::format_usd(value);
  return 0;
}
