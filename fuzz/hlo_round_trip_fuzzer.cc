// libFuzzer target: arbitrary bytes -> parse -> verify -> print -> re-parse
// -> print (see round_trip_check.h). Any violated property aborts, so
// libFuzzer records the input as a crash; sanitizer reports, timeouts and
// out-of-memory are caught by libFuzzer itself (scripts/ci-fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "round_trip_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  std::string problem = hilo::fuzz::CheckRoundTrip(text);
  if (!problem.empty()) {
    std::fprintf(stderr, "hlo_round_trip_fuzzer: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
