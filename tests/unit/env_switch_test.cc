// The environment switches' reading (src/hilo/ir/env_switch.h): exactly "1"
// and exactly "0", nothing else.
#include "hilo/ir/env_switch.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace hilo {
namespace {

constexpr char kName[] = "HILO_ENV_SWITCH_TEST_VARIABLE";

TEST(EnvSwitchTest, OnlyExactlyOneOrZeroCount) {
  unsetenv(kName);
  EXPECT_FALSE(EnvSwitchIsOne(kName));
  EXPECT_FALSE(EnvSwitchIsZero(kName));
  setenv(kName, "1", 1);
  EXPECT_TRUE(EnvSwitchIsOne(kName));
  EXPECT_FALSE(EnvSwitchIsZero(kName));
  setenv(kName, "0", 1);
  EXPECT_FALSE(EnvSwitchIsOne(kName));
  EXPECT_TRUE(EnvSwitchIsZero(kName));
  for (const char* other : {"", "10", "01", "yes", "true", " 1", "0 "}) {
    setenv(kName, other, 1);
    EXPECT_FALSE(EnvSwitchIsOne(kName)) << "'" << other << "'";
    EXPECT_FALSE(EnvSwitchIsZero(kName)) << "'" << other << "'";
  }
  unsetenv(kName);
}

}  // namespace
}  // namespace hilo
