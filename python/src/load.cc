#include "load.h"

#include <utility>

#include "absl/strings/cord.h"
#include "file_io.h"
#include "hilo/text/parser.h"

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
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(input->text(), path);
  if (!module.ok()) return module.status();
  LoadedModule loaded;
  loaded.module = *std::move(module);
  loaded.text = std::string(input->text());
  return loaded;
}

bool IsReadError(const absl::Status& status) {
  return status.GetPayload(kReadErrorPayload).has_value();
}

}  // namespace hilo::python
