#pragma once
// Human-readable rendering of SI quantities for summaries (never for JSON, which carries raw SI numbers).
#include <string>

namespace fmsim::units {

std::string format_bytes(double bytes);              ///< "80 GB", "13.4 TB" (powers of 1000)
std::string format_bandwidth(double bytes_per_s);    ///< "400 GB/s", "3.2 Tb/s" is not used: always bytes
std::string format_time(double seconds);             ///< "936 ns", "2.5 us", "1.2 s"
std::string format_flop_rate(double flops_per_s);    ///< "989.5 TFLOP/s"
std::string format_usd(double usd);                  ///< "$1,234.56"

}  // namespace fmsim::units
