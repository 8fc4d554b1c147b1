// libFuzzer target for the proto reader (src/hilo/proto): arbitrary bytes are
// read as a module in whatever format they look like (binary or text
// HloModuleProto / HloProto / HloSnapshot, or HLO text); a module that loads
// is verified, written as a binary and as a text proto, and each must read
// back and print exactly as the loaded module does. Errors are fine;
// crashes, sanitizer reports, hangs and a round trip that changes the module
// are not (the target aborts, so libFuzzer keeps the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hilo/analysis/hlo_verifier.h"
#include "hilo/proto/module_file.h"
#include "hilo/text/printer.h"

namespace {

void Check(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "proto_reader_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<hilo::LoadedModule> loaded = hilo::LoadModule(bytes, "fuzz-input");
  if (!loaded.ok()) return 0;
  hilo::VerifyHloModule(*loaded->module).IgnoreError();
  const std::string printed = hilo::PrintHloModule(*loaded->module);
  for (hilo::ModuleFormat format : {hilo::ModuleFormat::kProto, hilo::ModuleFormat::kProtoText}) {
    absl::StatusOr<std::string> out = hilo::SerializeModule(*loaded->module, format);
    if (!out.ok()) continue;  // e.g. larger than a proto can be
    absl::StatusOr<hilo::LoadedModule> again = hilo::LoadModule(
        *out, format == hilo::ModuleFormat::kProto ? "again.pb" : "again.pbtxt");
    Check(again.ok(), "a written module does not read back", std::string(again.ok() ? "" : again.status().message()));
    Check(hilo::PrintHloModule(*again->module) == printed, "the round trip changed the module", printed);
  }
  return 0;
}
