#include "fmsim/cli/output_file.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/common/error.hpp"

namespace fmsim::cli {

hardware::Catalog load_catalog(const GlobalOptions& globals) {
  return hardware::Catalog::load(globals.catalog_dir.empty() ? hardware::Catalog::default_directory()
                                                             : std::filesystem::path(globals.catalog_dir));
}

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content << std::flush;
    return;
  }
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path temporary = target;
  temporary += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot open for writing (does the directory exist?)");
    out << content;
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw InputError(path + ": write failed");
    }
  }
  std::error_code error;
  fs::rename(temporary, target, error);
  if (error) {
    fs::remove(temporary, error);
    throw InputError(path + ": cannot move the finished file into place");
  }
}

}  // namespace fmsim::cli
