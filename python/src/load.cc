#include "load.h"

#include <utility>

#include "absl/strings/cord.h"
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
  LoadedModule loaded;
  loaded.text = *std::move(input);
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(loaded.text.text(), path);
  if (!module.ok()) return module.status();
  loaded.module = *std::move(module);
  return loaded;
}

bool IsReadError(const absl::Status& status) {
  return status.GetPayload(kReadErrorPayload).has_value();
}

}  // namespace hilo::python
