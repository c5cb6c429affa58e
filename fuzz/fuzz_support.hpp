#pragma once
// Shared by the libFuzzer targets (docs/robustness.md). Each target feeds one parser the bytes libFuzzer
// gives it, as the CLI would: parsers that read a file get a real file, in a scratch directory laid out
// like the source tree (configs/fuzz/INPUT beside links to the shipped configs/*, topologies/), so the
// relative references of shipped files ("../../topologies/p5-16node.json") resolve as they do in the repo.
//
// The contract checked is the project's: bad input ends in fmsim::InputError (exit 2). Any other exception
// escapes the target and libFuzzer reports it as a crash (the CLI would exit 3, "internal error"); so do
// sanitizer reports, hangs (-timeout) and runaway memory (-rss_limit_mb).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "fmsim/common/error.hpp"
#include "fmsim/hardware/catalog.hpp"

#ifndef FMSIM_SOURCE_DIR
#error "FMSIM_SOURCE_DIR must name the source tree (set by fuzz/CMakeLists.txt)"
#endif

namespace fmsim::fuzz {

inline const std::filesystem::path& source_dir() {
  static const std::filesystem::path dir = FMSIM_SOURCE_DIR;
  return dir;
}

/// The scratch tree, made once per process and removed at exit (links are removed, not followed).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    namespace fs = std::filesystem;
    const char* base = std::getenv("TMPDIR");
    fs::path root = fs::path(base && *base ? base : "/tmp") / ("fmsim-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "configs" / "fuzz");
    fs::create_directory_symlink(source_dir() / "topologies", root / "topologies");
    for (const auto& entry : fs::directory_iterator(source_dir() / "configs")) {
      fs::create_directory_symlink(entry.path(), root / "configs" / entry.path().filename());
    }
    // The exit handler must not read `dir`: registered while `dir` is being built, it runs after `dir` is
    // destroyed (a heap-use-after-free under ASan at a fuzzer's exit). It reads a copy never freed.
    static const std::string* const cleanup_root = new std::string(root.string());
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(*cleanup_root, ignored);
    });
    spdlog::set_level(spdlog::level::off);  // loaders' warnings would flood the fuzzer's output
    return root;
  }();
  return dir;
}

/// Writes the input to configs/fuzz/NAME in the scratch tree and returns its path.
inline std::filesystem::path write_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
  const auto path = scratch_dir() / "configs" / "fuzz" / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();  // the harness itself failed: not a finding about fmsim
  return path;
}

/// The shipped catalog, loaded once.
inline const hardware::Catalog& shipped_catalog() {
  static const hardware::Catalog catalog = hardware::Catalog::load(source_dir() / "topologies" / "catalog");
  return catalog;
}

/// Runs `parse`; an InputError is the expected outcome for bad input and ends the run quietly.
template <typename F>
void expect_input_error_only(F&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

}  // namespace fmsim::fuzz
