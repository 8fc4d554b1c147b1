#include "tool_cli.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/proto_registration.h"

namespace hilo::tool {

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kResourceExhausted:
      return kExitBadInput;
    default:
      return kExitInternal;
  }
}

void PrintError(absl::string_view tool, absl::string_view message) {
  std::fprintf(stderr, "%s: error: %s\n", std::string(tool).c_str(), std::string(message).c_str());
}

void PrintWarning(absl::string_view tool, absl::string_view message) {
  std::fprintf(stderr, "%s: warning: %s\n", std::string(tool).c_str(),
               std::string(message).c_str());
}

int Fail(absl::string_view tool, const absl::Status& status) {
  PrintError(tool, status.message());
  return ExitCodeFor(status);
}

namespace {

// CLI11's help, without the `{value}` CLI11 shows after a flag that takes
// an optional value (`--explain{all}`): such a flag says what it takes in
// its option_text instead.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, is_positional);
    std::string shown;
    int depth = 0;
    for (char c : name) {
      if (c == '{') ++depth;
      if (depth == 0) shown += c;
      if (c == '}' && depth > 0) --depth;
    }
    return shown;
  }
};

}  // namespace

void SetUpApp(CLI::App& app, absl::string_view tool) {
  app.name(std::string(tool));
  // Every option's default value appears in --help.
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", absl::StrCat(tool, " (hilo) ", kHiloVersion));
  auto formatter = std::make_shared<HelpFormatter>();
  formatter->column_width(36);
  app.formatter(formatter);
}

std::optional<int> ParseCommandLine(CLI::App& app, absl::string_view tool, int argc,
                                    char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      app.exit(e);  // --help or --version, on stdout
      return kExitOk;
    }
    PrintError(tool, e.what());
    std::fprintf(stderr, "Run '%s --help' for usage.\n", std::string(tool).c_str());
    return kExitBadInput;
  }
  return std::nullopt;
}

CLI::Option* AddSeedOption(CLI::App& app, uint64_t* seed, const std::string& description) {
  CLI::Validator non_negative(
      [](std::string& value) -> std::string {
        std::string trimmed(absl::StripAsciiWhitespace(value));
        if (trimmed.empty()) return "the seed must be a non-negative integer";
        for (char c : trimmed) {
          if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
            return "the seed must be a non-negative integer, not '" + value + "'";
          }
        }
        return std::string();
      },
      "");
  return app.add_option("--seed", *seed, description)->check(non_negative);
}

bool ShouldAnnounceStdinRead(const std::string& input, bool stdin_is_terminal) {
  return input == "-" && stdin_is_terminal;
}

void AnnounceStdinRead(absl::string_view tool, const std::string& input) {
  if (!ShouldAnnounceStdinRead(input, isatty(STDIN_FILENO) == 1)) return;
  std::fprintf(stderr,
               "%s: reading the module from standard input (end it with Ctrl-D; '%s --help' "
               "for usage)\n",
               std::string(tool).c_str(), std::string(tool).c_str());
}

int RunTool(absl::string_view tool, const std::function<int()>& main_body) {
  RegisterProtoDescriptorsUnlessLazy();  // HILO_LAZY_PROTO=0: at start-up, as before
  try {
    return main_body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", std::string(tool).c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: internal error: unknown exception\n", std::string(tool).c_str());
  }
  return kExitInternal;
}

}  // namespace hilo::tool
