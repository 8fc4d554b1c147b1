#include "hilo/eval/progress_line.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hilo {
namespace eval {

ProgressLine::ProgressLine(bool enabled, std::FILE* stream, Clock clock)
    : enabled_(enabled && stream != nullptr), stream_(stream), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [start = std::chrono::steady_clock::now()] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
  }
}

ProgressLine ProgressLine::ForStandardError(bool enabled) {
  return ProgressLine(enabled && isatty(2) == 1, stderr);
}

ProgressLine::~ProgressLine() {
  if (drawn_ && stream_ != nullptr) {
    std::fputs("\r\x1b[K", stream_);
    std::fflush(stream_);
  }
}

void ProgressLine::Update(absl::string_view phase, int64_t devices, int64_t executed, int64_t expected) {
  if (!enabled_) return;
  const double elapsed = clock_();
  if (elapsed < 1.0 || (drawn_ && elapsed - last_drawn_ < 0.05)) return;
  last_drawn_ = elapsed;
  std::string line = absl::StrFormat("checking equivalence: %s, %d devices", phase, devices);
  if (executed > 0) absl::StrAppend(&line, absl::StrFormat(", %d instructions", executed));
  absl::StrAppend(&line, absl::StrFormat(", %.1f s", elapsed));
  if (expected > 0 && executed > 0 && executed < expected) {
    absl::StrAppend(&line, absl::StrFormat(", about %.0f s left", elapsed * (expected - executed) / executed));
  }
  std::fprintf(stream_, "\r%s\x1b[K", line.c_str());
  std::fflush(stream_);
  drawn_ = true;
}

}  // namespace eval
}  // namespace hilo
