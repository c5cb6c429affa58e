#pragma once
// Physical quantities written as strings with units ("3200Gbps", "936ns", "80GiB", "989.5TFLOPS"),
// converted to SI doubles: bytes, seconds, bytes/s, FLOP/s.
#include <string>
#include <string_view>

namespace fmsim::units {

enum class Dimension {
  bytes,         ///< B, KB/MB/GB/TB/PB (powers of 1000), KiB/MiB/GiB/TiB/PiB (powers of 1024)
  time,          ///< s, ms, us (or µs), ns, min, h
  bandwidth,     ///< bytes/s: Bps/KBps/MBps/GBps/TBps (also GB/s); bits/s: bps/Kbps/Mbps/Gbps/Tbps (also Gb/s)
  flop_rate,     ///< FLOPS, GFLOPS, TFLOPS, PFLOPS, EFLOPS
  request_rate,  ///< per second: "3500/s"
};

/// Human name of a dimension with example spellings, used in error messages ("a bandwidth like '400GBps'").
std::string describe(Dimension dimension);

/// Parses text into the SI value of the given dimension. Throws std::invalid_argument with a short
/// reason ("unknown unit 'Gbs'", "missing unit", "negative value") when the text is not such a quantity.
double parse(std::string_view text, Dimension dimension);

/// Parses a size the way nccl-tests does on its command line: a bare integer, or an integer with a
/// K/M/G/T suffix meaning powers of 1024 ("8", "128K", "16G"). Throws std::invalid_argument.
double parse_size_argument(std::string_view text);

}  // namespace fmsim::units
