// The progress line of a long equivalence check (issue 17, item 8): drawn on
// a terminal only, once the check has taken more than a second, redrawn in
// place (`\r`, erase to end of line) and erased when the check ends:
//
//   checking equivalence: module after the passes, 32 devices, 18432 instructions, 3.2 s, about 1 s left
//
// The stream and the clock are injected so the behaviour can be tested.
#ifndef HILO_EVAL_PROGRESS_LINE_H_
#define HILO_EVAL_PROGRESS_LINE_H_

#include <cstdint>
#include <cstdio>
#include <functional>

#include "absl/strings/string_view.h"

namespace hilo {
namespace eval {

class ProgressLine {
 public:
  // Seconds since the check started.
  using Clock = std::function<double()>;

  // Draws on `stream` when `enabled`; `clock` defaults to a steady clock
  // started now.
  ProgressLine(bool enabled, std::FILE* stream, Clock clock = {});
  // On standard error when `enabled` and standard error is a terminal
  // (returned by guaranteed copy elision: the class neither copies nor moves).
  static ProgressLine ForStandardError(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // `executed`: instructions run so far (0: not shown, e.g. while the
  // changed cone is cut); `expected`: the instructions the whole check is
  // expected to execute (0 = unknown: no estimate is shown).
  void Update(absl::string_view phase, int64_t devices, int64_t executed, int64_t expected);
  bool drawn() const { return drawn_; }

 private:
  bool enabled_;
  std::FILE* stream_;
  Clock clock_;
  bool drawn_ = false;
  double last_drawn_ = 0;  // redrawn at most every 50 ms
};

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_PROGRESS_LINE_H_
