// CheckProtoRoundTrip: the property the proto reader fuzzer and the
// regression replay test check on arbitrary bytes.
//
//   LoadModule(bytes) fails  -> fine (an error, no crash);
//   LoadModule(bytes) works  -> the module, written as a binary proto and as
//                               a text proto, reads back and prints exactly
//                               as the loaded module does (a format may
//                               refuse to write it, e.g. a text proto for a
//                               module holding undeclared fields).
// CheckHandWrittenCodec: the hand-written instruction reader and writer
// (UseHandWrittenProtoCodec) against protobuf's generated messages:
//
//   LoadModule(bytes) gives the same result both ways: the same error, or
//   modules that print the same and hold the same kept proto fields (each
//   written by the generated writer gives the same message: the same bytes
//   once parsed and serialized deterministically, since the order of a map's
//   entries is protobuf's choice); and the module
//   written by the hand-written writer is the message the generated writer
//   writes (both parsed and serialized deterministically: the same bytes).
// Both return an empty string when the property holds, else what broke.
// Header-only, like round_trip_check.h, so that fuzz/ and tests/unit/ share it.
#ifndef HILO_FUZZ_PROTO_ROUND_TRIP_CHECK_H_
#define HILO_FUZZ_PROTO_ROUND_TRIP_CHECK_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hilo/analysis/hlo_verifier.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "hilo/proto/hlo.pb.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/module_file.h"
#include "hilo/text/printer.h"

namespace hilo::fuzz {

// `bytes` parsed as an HloModuleProto and serialized deterministically (maps
// sorted), or "unparsable".
inline std::string CanonicalModuleBytes(const std::string& bytes) {
  xla::HloModuleProto proto;
  if (!proto.ParseFromString(bytes)) return "unparsable";
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    proto.SerializeToCodedStream(&coded);
  }
  return out;
}

inline std::string CheckHandWrittenCodec(absl::string_view bytes) {
  struct Restore {
    bool was = UseHandWrittenProtoCodec();
    ~Restore() { SetHandWrittenProtoCodec(was); }
  } restore;
  SetHandWrittenProtoCodec(true);
  absl::StatusOr<LoadedModule> hand = LoadModule(bytes, "fuzz-input");
  SetHandWrittenProtoCodec(false);
  absl::StatusOr<LoadedModule> generated = LoadModule(bytes, "fuzz-input");
  if (hand.ok() != generated.ok() ||
      (!hand.ok() && hand.status().message() != generated.status().message())) {
    return absl::StrCat("the hand-written reader says ", hand.ok() ? "OK" : hand.status().message(),
                        ", the generated messages ", generated.ok() ? "OK" : generated.status().message());
  }
  if (!hand.ok()) return "";
  if (PrintHloModule(*hand->module) != PrintHloModule(*generated->module)) {
    return "the hand-written reader gives another module than the generated messages";
  }
  // Still the generated writer: the kept fields must be the same.
  absl::StatusOr<std::string> from_hand = HloModuleToBytes(*hand->module);
  absl::StatusOr<std::string> from_generated = HloModuleToBytes(*generated->module);
  if (from_hand.ok() != from_generated.ok() ||
      (from_hand.ok() && CanonicalModuleBytes(*from_hand) != CanonicalModuleBytes(*from_generated))) {
    return "the hand-written reader keeps other proto fields than the generated messages";
  }
  SetHandWrittenProtoCodec(true);
  absl::StatusOr<std::string> hand_written = HloModuleToBytes(*generated->module);
  if (hand_written.ok() != from_generated.ok()) {
    return "the hand-written writer fails where the generated messages do not, or the reverse";
  }
  if (hand_written.ok() && CanonicalModuleBytes(*hand_written) != CanonicalModuleBytes(*from_generated)) {
    return "the hand-written writer writes another message than the generated messages";
  }
  return "";
}

inline std::string CheckProtoRoundTrip(absl::string_view bytes) {
  if (std::string problem = CheckHandWrittenCodec(bytes); !problem.empty()) return problem;
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
