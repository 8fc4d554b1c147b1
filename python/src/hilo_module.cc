// The extension module hilo._hilo. The package's public names are
// re-exported (and some wrapped) by hilo/__init__.py.
#include <time.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "errors.h"
#include "hilo/text/parser.h"
#include "views.h"

namespace hilo::python {
namespace {

// Seconds of this thread's CPU time (the parse runs on the calling thread).
double ThreadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// For bench/python_bench.py: (wall seconds, thread CPU seconds) of one
// ParseHloModule call on `text` made in C++ (module teardown not counted),
// to compare with hilo.parse in the same process.
std::pair<double, double> TimeCppParse(const std::string& text) {
  absl::Status status;
  double wall = 0;
  double cpu = 0;
  {
    py::gil_scoped_release release;
    auto start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuSeconds();
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, "<bench>");
    cpu = ThreadCpuSeconds() - cpu_start;
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    status = module.status();
  }
  if (!status.ok()) RaiseStatus(ErrorKind::kParse, status);
  return {wall, cpu};
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
