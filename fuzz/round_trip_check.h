// CheckRoundTrip: the property the fuzzer and the regression replay test
// check on arbitrary bytes.
//
//   parse(text) fails  -> the error has the documented form
//                         `<file>:<line>:<col>: error: <message>`;
//   parse(text) works  -> verify() returns OK or an error with a message,
//                         print -> re-parse succeeds, prints the same bytes,
//                         has as many instructions and the same verifier
//                         verdict.
// Returns an empty string when the property holds, else what broke.
// Header-only so that the libFuzzer target (fuzz/) and the unit test
// (tests/unit/adversarial_test.cc) share it without a library of their own.
#ifndef HILO_FUZZ_ROUND_TRIP_CHECK_H_
#define HILO_FUZZ_ROUND_TRIP_CHECK_H_

#include <algorithm>
#include <cctype>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo::fuzz {

// True if `message` starts with `<filename>:<line>:<col>: error: ` and has
// a non-empty message after it.
inline bool IsWellFormedParseError(absl::string_view message, absl::string_view filename) {
  if (!absl::ConsumePrefix(&message, filename) || !absl::ConsumePrefix(&message, ":")) {
    return false;
  }
  for (int field = 0; field < 2; ++field) {
    size_t digits = 0;
    while (digits < message.size() && std::isdigit(static_cast<unsigned char>(message[digits]))) {
      ++digits;
    }
    if (digits == 0) return false;
    message.remove_prefix(digits);
    if (!absl::ConsumePrefix(&message, ":")) return false;
  }
  if (!absl::ConsumePrefix(&message, " error: ")) return false;
  return !message.empty() && message[0] != '\n';
}

// Where two printed texts first differ, with a little context.
inline std::string FirstDifference(absl::string_view a, absl::string_view b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i < 80 ? 0 : i - 80;
  return absl::StrCat("first difference at byte ", i, "\n  first:  ...",
                      a.substr(from, std::min<size_t>(160, a.size() - from)),
                      "\n  second: ...", b.substr(from, std::min<size_t>(160, b.size() - from)));
}

inline std::string CheckRoundTrip(absl::string_view text) {
  constexpr absl::string_view kFile = "fuzz.hlo";
  auto parsed = ParseHloModule(text, kFile);
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument) {
      return absl::StrCat("parse error with status code ",
                          absl::StatusCodeToString(parsed.status().code()),
                          " (expected INVALID_ARGUMENT): ", parsed.status().message());
    }
    if (!IsWellFormedParseError(parsed.status().message(), kFile)) {
      return absl::StrCat("parse error not of the form `file:line:col: error: message`: ",
                          parsed.status().message());
    }
    return "";
  }
  const HloModule& module = **parsed;
  absl::Status verified = VerifyHloModule(module);
  if (!verified.ok() && verified.message().empty()) return "verifier error without a message";

  std::string printed = PrintHloModule(module);
  constexpr absl::string_view kPrinted = "printed.hlo";
  auto reparsed = ParseHloModule(printed, kPrinted);
  if (!reparsed.ok()) {
    return absl::StrCat("the printed module does not parse: ", reparsed.status().message(),
                        "\n--- printed module ---\n", printed);
  }
  std::string reprinted = PrintHloModule(**reparsed);
  if (reprinted != printed) {
    return absl::StrCat("print(parse(print(parse(x)))) != print(parse(x)): ",
                        FirstDifference(printed, reprinted));
  }
  if ((*reparsed)->instruction_count() != module.instruction_count()) {
    return absl::StrCat("instruction count changed from ", module.instruction_count(), " to ",
                        (*reparsed)->instruction_count(), " in the round trip");
  }
  absl::Status reverified = VerifyHloModule(**reparsed);
  if (reverified.ok() != verified.ok()) {
    return absl::StrCat("verifier verdict changed in the round trip: before: ",
                        verified.ToString(), "; after: ", reverified.ToString());
  }
  return "";
}

}  // namespace hilo::fuzz

#endif  // HILO_FUZZ_ROUND_TRIP_CHECK_H_
