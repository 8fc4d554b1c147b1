#include "malloc_tunables.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "hilo/ir/env_switch.h"

namespace hilo::tool {

bool WantsMallocTunables(const std::string& input_path) {
#ifdef __GLIBC__
  if (kMallocReplacedBySanitizer || std::getenv("GLIBC_TUNABLES") != nullptr) return false;
  const char* use = std::getenv("HILO_MALLOC_TUNABLES");
  if (use != nullptr && std::strcmp(use, "0") == 0) return false;
  struct stat st;
  return stat(input_path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= kLargeInputBytes;
#else
  (void)input_path;
  return false;
#endif
}

void ReexecWithMallocTunables(char** argv, const std::string& input_path) {
  if (!WantsMallocTunables(input_path)) return;
  if (setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=16777216", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GLIBC_TUNABLES");  // the exec failed: run as we are
}

void UseOneMallocArena() {
#ifdef __GLIBC__
  if (kMallocReplacedBySanitizer || EnvSwitchIsZero("HILO_ONE_MALLOC_ARENA")) return;
  mallopt(M_ARENA_MAX, 1);
#endif
}

}  // namespace hilo::tool
