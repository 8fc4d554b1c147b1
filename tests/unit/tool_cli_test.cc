// tools/common/tool_cli.h: what every hilo tool shares on its command line.
#include "common/tool_cli.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hilo::tool {
namespace {

TEST(ToolCliTest, ExitCodes) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), kExitOk);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("x")), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(absl::PermissionDeniedError("x")), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("x")), kExitInternal);
  EXPECT_EQ(ExitCodeFor(absl::UnknownError("x")), kExitInternal);
}

TEST(ToolCliTest, AnnouncesStdinOnlyOnATerminal) {
  EXPECT_TRUE(ShouldAnnounceStdinRead("-", true));
  EXPECT_FALSE(ShouldAnnounceStdinRead("-", false));  // a pipe or a file
  EXPECT_FALSE(ShouldAnnounceStdinRead("in.hlo", true));
}

// Parses `args` (after the program name) with a --seed option.
std::optional<int> ParseSeed(std::vector<std::string> args, uint64_t* seed) {
  CLI::App app{"test"};
  SetUpApp(app, "tool");
  AddSeedOption(app, seed, "seed");
  std::vector<char*> argv = {const_cast<char*>("tool")};
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseCommandLine(app, "tool", static_cast<int>(argv.size()), argv.data());
}

TEST(ToolCliTest, SeedIsANonNegativeInteger) {
  uint64_t seed = 0;
  EXPECT_EQ(ParseSeed({"--seed=42"}, &seed), std::nullopt);
  EXPECT_EQ(seed, 42u);
  EXPECT_EQ(ParseSeed({"--seed=18446744073709551615"}, &seed), std::nullopt);
  EXPECT_EQ(seed, UINT64_MAX);
  seed = 7;
  EXPECT_EQ(ParseSeed({"--seed=-1"}, &seed), kExitBadInput);
  EXPECT_EQ(ParseSeed({"--seed", "-1"}, &seed), kExitBadInput);
  EXPECT_EQ(ParseSeed({"--seed=1.5"}, &seed), kExitBadInput);
  EXPECT_EQ(ParseSeed({"--seed="}, &seed), kExitBadInput);
  EXPECT_EQ(seed, 7u);
}

TEST(ToolCliTest, UsageErrorsAreExitOneHelpAndVersionZero) {
  uint64_t seed = 0;
  EXPECT_EQ(ParseSeed({"--no-such-flag"}, &seed), kExitBadInput);
  EXPECT_EQ(ParseSeed({"--help"}, &seed), kExitOk);
  EXPECT_EQ(ParseSeed({"--version"}, &seed), kExitOk);
}

}  // namespace
}  // namespace hilo::tool
