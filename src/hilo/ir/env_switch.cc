#include "hilo/ir/env_switch.h"

#include <cstdlib>

#include "absl/strings/string_view.h"

namespace hilo {
namespace {

bool EnvIs(const char* name, absl::string_view expected) {
  const char* value = std::getenv(name);
  return value != nullptr && absl::string_view(value) == expected;
}

}  // namespace

bool EnvSwitchIsOne(const char* name) { return EnvIs(name, "1"); }
bool EnvSwitchIsZero(const char* name) { return EnvIs(name, "0"); }

}  // namespace hilo
