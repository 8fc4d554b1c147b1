// Errors as Python exceptions: every failure of the library (an absl::Status)
// becomes an instance of a hilo.HloError subclass (defined in
// hilo/_errors.py) carrying the message and, where the error has a place in
// the text, file / line / column.
#ifndef HILO_PYTHON_ERRORS_H_
#define HILO_PYTHON_ERRORS_H_

#include <string>
#include <utility>

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "module_handle.h"

namespace hilo::python {

namespace py = pybind11;

// The exception classes of hilo/_errors.py, by name.
enum class ErrorKind {
  kHlo,          // HloError
  kParse,        // ParseError: text that does not parse
  kLoad,         // LoadError: a file that can not be read (also an OSError)
  kVerify,       // VerifyError: a module the verifier rejects
  kPass,         // PassError: a pass failed, or left an invalid module
  kInterpreter,  // InterpreterError: run / check_equivalence failed
  kStaleView,    // StaleViewError: a view of something no longer in the module
  kModuleBusy,   // ModuleBusyError: the module is in use on another thread
};

// Raises the exception for `status` (with the GIL held). A message of the
// form `file:line:col: error: text` (the parser's) gives the location;
// otherwise a verifier's error is located in `handle`'s source text when
// the module is still the one parsed from it. `extra` becomes attributes of
// the exception.
[[noreturn]] void RaiseStatus(ErrorKind kind, const absl::Status& status,
                              const ModuleHandle* handle = nullptr, py::dict extra = py::dict());
[[noreturn]] void RaiseError(ErrorKind kind, const std::string& message);

template <typename T>
T ValueOrRaise(absl::StatusOr<T> result, ErrorKind kind, const ModuleHandle* handle = nullptr) {
  if (!result.ok()) RaiseStatus(kind, result.status(), handle);
  return *std::move(result);
}

}  // namespace hilo::python

#endif  // HILO_PYTHON_ERRORS_H_
