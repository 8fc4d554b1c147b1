// Gives a tool's process glibc's malloc settings for large modules, through
// glibc's public tunables (GLIBC_TUNABLES, read only when a process starts):
// the process re-executes itself once with them set. Parsing a module
// allocates many small objects the IR's arena does not hold; in 4 KiB pages
// each first touch is a page fault (~13 us on this project's VM), so the
// heap is put in transparent huge pages (`glibc.malloc.hugetlb=1`, glibc >=
// 2.35; older glibc ignores it) and grown 16 MiB at a time
// (`glibc.malloc.top_pad`). Measured gain and switch: docs/performance.md
// ("eighth session: memory and the heap"). Nothing here reads glibc's
// private heap layout.
#ifndef HILO_TOOLS_COMMON_MALLOC_TUNABLES_H_
#define HILO_TOOLS_COMMON_MALLOC_TUNABLES_H_

#include <string>

namespace hilo::tool {

// Re-executes the running program (/proc/self/exe) with `argv` and
// GLIBC_TUNABLES set when `input_path` is a file of at least
// kLargeInputBytes (below that the second start-up, ~2.5 ms, costs more than
// the settings gain), unless GLIBC_TUNABLES is already set (the user's
// choice, or this process after its re-execution), HILO_MALLOC_TUNABLES=0,
// the build is not for glibc, or a sanitizer replaces malloc. Returns only
// when it does not re-execute (also when the exec fails). Call it before the
// process has done anything it should not do twice.
inline constexpr long long kLargeInputBytes = 16ll << 20;

// True when a sanitizer replaces malloc (the tunables then do nothing).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kMallocReplacedBySanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kMallocReplacedBySanitizer = true;
#else
inline constexpr bool kMallocReplacedBySanitizer = false;
#endif
#else
inline constexpr bool kMallocReplacedBySanitizer = false;
#endif
void ReexecWithMallocTunables(char** argv, const std::string& input_path);

// Whether ReexecWithMallocTunables would re-execute for `input_path` (all of
// its conditions but the exec itself).
bool WantsMallocTunables(const std::string& input_path);

// Makes every thread allocate from the one heap (glibc's public
// mallopt(M_ARENA_MAX, 1)): hilo-opt's verifier thread otherwise gets a heap
// of its own, which can not reuse what the parse freed in the main one, and
// its pages add to the peak (mixtral -270 KiB, `hilo-gen -L 1700` -480 KiB;
// docs/performance.md, "twelfth session"). HILO_ONE_MALLOC_ARENA=0 keeps
// glibc's default; nothing without glibc or under a sanitizer's malloc. Call
// it before a second thread starts.
void UseOneMallocArena();

}  // namespace hilo::tool

#endif  // HILO_TOOLS_COMMON_MALLOC_TUNABLES_H_
