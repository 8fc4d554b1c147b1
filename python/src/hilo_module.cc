// The extension module hilo._hilo. The package's public names are
// re-exported (and some wrapped) by hilo/__init__.py.
#include <chrono>
#include <memory>
#include <string>

#include "errors.h"
#include "hilo/text/parser.h"
#include "views.h"

namespace hilo::python {
namespace {

// For bench/python_bench.py: seconds one ParseHloModule call takes on
// `text` in C++ (module teardown not counted), to compare with hilo.parse in
// the same process.
double TimeCppParse(const std::string& text) {
  absl::Status status;
  double seconds = 0;
  {
    py::gil_scoped_release release;
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, "<bench>");
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    status = module.status();
  }
  if (!status.ok()) RaiseStatus(ErrorKind::kParse, status);
  return seconds;
}

}  // namespace

PYBIND11_MODULE(_hilo, m) {
  m.doc() = "hilo's C++ library (HLO IR, text format, passes, interpreter); see hilo/__init__.py";
  RegisterIr(m);
  RegisterPasses(m);
  RegisterEval(m);
  m.def("_time_cpp_parse", &TimeCppParse, py::arg("text"));
}

}  // namespace hilo::python
