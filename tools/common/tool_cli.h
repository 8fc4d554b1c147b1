// What every hilo tool (hilo-opt, hilo-run, hilo-gen) shares on its command
// line, so that they behave alike (docs/tools.md):
// - exit statuses: 0 ok, 1 bad input or usage (including unreadable inputs
//   and unwritable outputs), 2 internal error, 3 not equivalent;
// - messages `TOOL: error: ...` and `TOOL: warning: ...` on stderr, the
//   command-line library's usage errors included;
// - `--help` (with defaults shown) and `--version`;
// - option checks: a seed is a non-negative integer.
#ifndef HILO_TOOLS_COMMON_TOOL_CLI_H_
#define HILO_TOOLS_COMMON_TOOL_CLI_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hilo::tool {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;  // bad input, usage, unreadable/unwritable file
inline constexpr int kExitInternal = 2;  // a bug in hilo
inline constexpr int kExitNotEquivalent = 3;
inline constexpr int kExitUndecided = 4;  // --check-equivalence reached no verdict

// The version every tool prints for --version.
inline constexpr char kHiloVersion[] = HILO_VERSION;  // CMake's project(hilo VERSION ...)

// Exit status for a failed step, by status code: what the user can fix (the
// input, the command line, a file) is 1, everything else 2.
int ExitCodeFor(const absl::Status& status);

// `TOOL: error: message` / `TOOL: warning: message` on stderr.
void PrintError(absl::string_view tool, absl::string_view message);
void PrintWarning(absl::string_view tool, absl::string_view message);
// Prints `status` as an error and returns its exit status (ExitCodeFor).
int Fail(absl::string_view tool, const absl::Status& status);

// A CLI::App for `tool` with --help (option defaults shown) and --version.
// Create it first, then add the options.
void SetUpApp(CLI::App& app, absl::string_view tool);

// Parses the command line. nullopt: go on. Otherwise the tool exits with
// the returned status: --help and --version printed (0), or a usage error
// printed as `TOOL: error: ...` with a pointer to --help (1).
std::optional<int> ParseCommandLine(CLI::App& app, absl::string_view tool, int argc,
                                    char** argv);

// Adds `--seed`: a non-negative integer (CLI11 alone would wrap -1 to 2^64-1).
CLI::Option* AddSeedOption(CLI::App& app, uint64_t* seed, const std::string& description);

// Whether a tool about to read its input from standard input should say so
// first: only when standard input is a terminal (a user who forgot the
// input file would otherwise see the tool wait silently).
bool ShouldAnnounceStdinRead(const std::string& input, bool stdin_is_terminal);
// Prints `TOOL: reading the module from standard input (end with Ctrl-D; TOOL --help for usage)`
// when ShouldAnnounceStdinRead says so for the process's standard input.
void AnnounceStdinRead(absl::string_view tool, const std::string& input);

// Runs `main_body` and turns an exception escaping it into
// `TOOL: internal error: ...` and exit status 2.
int RunTool(absl::string_view tool, const std::function<int()>& main_body);

}  // namespace hilo::tool

#endif  // HILO_TOOLS_COMMON_TOOL_CLI_H_
