// CheckProtoRoundTrip: the property the proto reader fuzzer and the
// regression replay test check on arbitrary bytes.
//
//   LoadModule(bytes) fails  -> fine (an error, no crash);
//   LoadModule(bytes) works  -> the module, written as a binary proto and as
//                               a text proto, reads back and prints exactly
//                               as the loaded module does (a format may
//                               refuse to write it, e.g. a text proto for a
//                               module holding undeclared fields).
// Returns an empty string when the property holds, else what broke.
// Header-only, like round_trip_check.h, so that fuzz/ and tests/unit/ share it.
#ifndef HILO_FUZZ_PROTO_ROUND_TRIP_CHECK_H_
#define HILO_FUZZ_PROTO_ROUND_TRIP_CHECK_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/proto/module_file.h"
#include "hilo/text/printer.h"

namespace hilo::fuzz {

inline std::string CheckProtoRoundTrip(absl::string_view bytes) {
  absl::StatusOr<LoadedModule> loaded = LoadModule(bytes, "fuzz-input");
  if (!loaded.ok()) return "";
  VerifyHloModule(*loaded->module).IgnoreError();
  const std::string printed = PrintHloModule(*loaded->module);
  for (ModuleFormat format : {ModuleFormat::kProto, ModuleFormat::kProtoText}) {
    absl::StatusOr<std::string> out = SerializeModule(*loaded->module, format);
    if (!out.ok()) continue;  // refused with a reason, e.g. larger than a proto can be
    const char* name = format == ModuleFormat::kProto ? "again.pb" : "again.pbtxt";
    absl::StatusOr<LoadedModule> again = LoadModule(*out, name);
    if (!again.ok()) {
      return absl::StrCat("a written module does not read back: ", again.status().message());
    }
    if (PrintHloModule(*again->module) != printed) {
      return absl::StrCat("the round trip through ", name, " changed the module:\n", printed);
    }
  }
  return "";
}

}  // namespace hilo::fuzz

#endif  // HILO_FUZZ_PROTO_ROUND_TRIP_CHECK_H_
