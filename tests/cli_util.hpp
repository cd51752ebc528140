// Running the `rml` program from a test: its exit code, whether a signal
// ended it, and what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_util.hpp"

namespace rml::test {

struct Run {
  int exit_code = -1;
  bool signalled = false;
  std::string out, err;
};

/// Runs the CLI with `args`, with `environment` ("NAME=value ...") set for it.
inline Run rml_cli(const std::string& args, const std::string& environment = "") {
  TempDir dir;
  const std::string command = environment + " " + std::string(RML_CLI) + " " + args + " >" + (dir / "out").string() +
                              " 2>" + (dir / "err").string();
  const int status = std::system(command.c_str());
  Run run;
  run.signalled = WIFSIGNALED(status);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  run.out = slurp(dir / "out");
  run.err = slurp(dir / "err");
  return run;
}

inline std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace rml::test
