// libFuzzer target for the proto reader (src/hilo/proto): arbitrary bytes are
// read as a module in whatever format they look like (binary or text
// HloModuleProto / HloProto / HloSnapshot, or HLO text); a module that loads
// must survive being written in both proto forms (proto_round_trip_check.h).
// Errors are fine; crashes, sanitizer reports, hangs and a round trip that
// changes the module are not (the target aborts, so libFuzzer keeps the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "proto_round_trip_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string problem = hilo::fuzz::CheckProtoRoundTrip(bytes);
  if (!problem.empty()) {
    std::fprintf(stderr, "proto_reader_fuzzer: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
