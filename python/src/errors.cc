#include "errors.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/text/source_location.h"

namespace hilo::python {
namespace {

const char* ClassName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kHlo: return "HloError";
    case ErrorKind::kParse: return "ParseError";
    case ErrorKind::kLoad: return "LoadError";
    case ErrorKind::kVerify: return "VerifyError";
    case ErrorKind::kPass: return "PassError";
    case ErrorKind::kInterpreter: return "InterpreterError";
    case ErrorKind::kStaleView: return "StaleViewError";
    case ErrorKind::kModuleBusy: return "ModuleBusyError";
  }
  return "HloError";
}

}  // namespace

void RaiseStatus(ErrorKind kind, const absl::Status& status, const ModuleHandle* handle,
                 py::dict extra) {
  std::string text(status.message());
  std::optional<ErrorLocation> located;
  if (handle != nullptr) {
    located = ParseErrorLocation(text, handle->display);
    if (!located.has_value() && handle->unchanged() && !handle->source.empty()) {
      if (std::optional<VerifierLocation> where = GetVerifierLocation(status)) {
        std::optional<size_t> offset =
            FindDefinition(handle->source, where->computation, where->instruction);
        if (offset.has_value()) {
          text = FormatErrorAt(handle->display, handle->source, *offset, status.message());
          located = ParseErrorLocation(text, handle->display);
        }
      }
    }
  }
  py::object cls = py::module_::import("hilo._errors").attr(ClassName(kind));
  extra["code"] = py::str(absl::StatusCodeToString(status.code()));
  if (located.has_value()) {
    extra["message"] = py::str(located->message);
    extra["file"] = py::str(handle->display);
    extra["line"] = located->line;
    extra["column"] = located->column;
  } else if (handle != nullptr && !handle->display.empty()) {
    extra["file"] = py::str(handle->display);
  }
  py::object error = cls(py::str(text), **extra);
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

void RaiseError(ErrorKind kind, const std::string& message) {
  py::object cls = py::module_::import("hilo._errors").attr(ClassName(kind));
  py::object error = cls(py::str(message));
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace hilo::python
