#include "load.h"

#include <utility>

#include "absl/strings/cord.h"
#include "common/file_io.h"
#include "hilo/proto/module_file.h"

namespace hilo::python {
namespace {

constexpr absl::string_view kReadErrorPayload = "hilo.python/read-error";

}  // namespace

absl::StatusOr<LoadedModule> LoadModuleFile(const std::string& path) {
  absl::StatusOr<InputBuffer> input = ReadInput(path);
  if (!input.ok()) {
    absl::Status status = input.status();
    status.SetPayload(kReadErrorPayload, absl::Cord());
    return status;
  }
  // Every format hilo-opt reads (HLO text, XLA's protos binary or text).
  absl::StatusOr<hilo::LoadedModule> read = LoadModule(input->text(), path);
  if (!read.ok()) return read.status();
  LoadedModule loaded;
  loaded.module = std::move(read->module);
  if (read->format == ModuleFormat::kText) loaded.text = std::string(input->text());
  return loaded;
}

bool IsReadError(const absl::Status& status) {
  return status.GetPayload(kReadErrorPayload).has_value();
}

}  // namespace hilo::python
