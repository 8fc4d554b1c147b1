// hilo.run and hilo.check_equivalence: the reference SPMD interpreter
// (src/hilo/eval/) on Modules, values as numpy arrays.
//
// Everything of the equivalence API is bound here, in RegisterEquivalence,
// so that an extension of eval/equivalence.h is one edit in one place.
//
// Arrays. The interpreter stores every floating-point array as doubles and
// every integer / pred array as int64 (eval/value.h). An f64, s64 or u64
// output is returned without a copy: a read-only numpy array over the
// interpreter's own buffer (kept alive by the array). Every other type is
// converted into a new array of its own dtype (exact: the stored values are
// values of the element type): pred -> bool, s8..u32 -> int8..uint32,
// f16 -> float16, f32 -> float32, and bf16 -> float32 (numpy has no
// bfloat16). fp8 and the other narrow types are not supported by the
// interpreter (an InterpreterError naming the type).
#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "errors.h"
#include "hilo/eval/equivalence.h"
#include "hilo/eval/interpreter.h"
#include "hilo/eval/value.h"
#include "hilo/ir/primitive_type.h"
#include "views.h"

namespace hilo::python {
namespace {

using eval::Array;
using eval::Value;

// The numpy dtype an element type is returned as.
const char* NumpyDtype(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::PRED: return "bool";
    case PrimitiveType::S2:
    case PrimitiveType::S4:  // sub-byte integers widened, as bf16 and fp8 to float32
    case PrimitiveType::S8: return "int8";
    case PrimitiveType::U2:
    case PrimitiveType::U4: return "uint8";
    case PrimitiveType::S16: return "int16";
    case PrimitiveType::S32: return "int32";
    case PrimitiveType::S64: return "int64";
    case PrimitiveType::U8: return "uint8";
    case PrimitiveType::U16: return "uint16";
    case PrimitiveType::U32: return "uint32";
    case PrimitiveType::U64: return "uint64";
    case PrimitiveType::F16: return "float16";
    case PrimitiveType::BF16: return "float32";
    case PrimitiveType::F32: return "float32";
    case PrimitiveType::F64: return "float64";
    case PrimitiveType::C64: return "complex64";
    case PrimitiveType::C128: return "complex128";
    default:  // the fp8 types and f4e2m1fn, as bf16
      return IsFloatingPointType(type) && BitWidth(type) <= 8 ? "float32" : nullptr;
  }
}

// A read-only numpy array over the array's storage, which `owner` keeps.
py::array StorageView(const std::shared_ptr<const Array>& array) {
  // The capsule owns a copy of the shared pointer.
  auto* keep = new std::shared_ptr<const Array>(array);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<const Array>*>(p); });
  std::vector<py::ssize_t> shape(array->dims().begin(), array->dims().end());
  py::array out;
  if (array->is_float()) {
    out = py::array(py::dtype::of<double>(), shape, array->f().data(), owner);
  } else {
    out = py::array(py::dtype::of<int64_t>(), shape, array->i().data(), owner);
  }
  out.attr("setflags")(py::arg("write") = false);
  return out;
}

py::array ToNumpy(const std::shared_ptr<const Array>& array) {
  if (array->is_complex()) {  // real + 1j * imaginary parts, a new array
    py::module_ np = py::module_::import("numpy");
    std::vector<py::ssize_t> shape(array->dims().begin(), array->dims().end());
    py::array re = py::array(py::dtype::of<double>(), shape, array->f().data());
    py::array im = py::array(py::dtype::of<double>(), shape, array->im().data());
    py::object z = np.attr("add")(re, np.attr("multiply")(im, py::cast(std::complex<double>(0, 1))));
    return py::array(z.attr("astype")(NumpyDtype(array->type())));
  }
  py::array storage = StorageView(array);
  const char* dtype = NumpyDtype(array->type());
  if (array->type() == PrimitiveType::F64 || array->type() == PrimitiveType::S64) return storage;
  // u64 is stored as its bit pattern: the same bytes, read unsigned.
  if (array->type() == PrimitiveType::U64) return storage.attr("view")(dtype);
  return storage.attr("astype")(dtype);
}

// The leaves of each device's output, depth-first (tokens left out).
py::list OutputsToPython(const std::vector<Value>& outputs) {
  py::list devices;
  for (const Value& output : outputs) {
    // Tuples are flattened with an explicit stack (no recursion on nesting).
    py::list leaves;
    std::vector<const Value*> stack = {&output};
    while (!stack.empty()) {
      const Value* value = stack.back();
      stack.pop_back();
      if (value->is_array()) {
        leaves.append(ToNumpy(value->shared_array()));
      } else if (value->is_tuple()) {
        for (auto it = value->elements().rbegin(); it != value->elements().rend(); ++it) {
          stack.push_back(&*it);
        }
      }
    }
    devices.append(leaves);
  }
  return devices;
}

// A Python value for one parameter (or tuple element) of `shape`: an
// array-like for an array, a sequence of them for a tuple. Recursion is on
// the shape's tuple nesting, which the parser bounds (kMaxNestingDepth).
Value FromPython(const py::handle& object, const Shape& shape, const std::string& where) {
  if (shape.IsTuple()) {
    py::sequence elements = py::reinterpret_borrow<py::sequence>(object);
    if (!py::isinstance<py::sequence>(object) ||
        static_cast<int64_t>(py::len(elements)) != shape.tuple_shapes_size()) {
      throw py::value_error(absl::StrCat(where, ": expected a sequence of ",
                                         shape.tuple_shapes_size(), " values for ",
                                         shape.ToString(false)));
    }
    std::vector<Value> values;
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      values.push_back(FromPython(elements[i], shape.tuple_shapes(i), absl::StrCat(where, ".", i)));
    }
    return Value::Tuple(std::move(values));
  }
  if (shape.IsToken()) return Value::Token();
  if (absl::Status supported = eval::CheckSupportedElementType(shape.element_type());
      !supported.ok()) {
    throw py::value_error(absl::StrCat(where, ": ", supported.message()));
  }
  if (IsComplexType(shape.element_type())) {
    throw py::value_error(absl::StrCat(where, ": complex inputs are not supported (complex parameters keep their random values)"));
  }
  py::module_ np = py::module_::import("numpy");
  const bool is_float = IsFloatingPointType(shape.element_type());
  // A list is read straight in the storage type (numpy would read
  // [2**64 - 1, 5] as float64).
  const char* list_dtype = is_float ? "float64"
                           : shape.element_type() == PrimitiveType::U64 ? "uint64"
                                                                         : "int64";
  py::array given = py::isinstance<py::array>(object)
                        ? py::reinterpret_borrow<py::array>(object)
                        : py::array(np.attr("asarray")(object, list_dtype));
  absl::Span<const int64_t> dims = shape.dimensions();
  std::vector<py::ssize_t> expected(dims.begin(), dims.end());
  std::vector<py::ssize_t> actual(given.shape(), given.shape() + given.ndim());
  if (actual != expected) {
    throw py::value_error(absl::StrCat(where, ": expected shape ", shape.ToString(false),
                                       ", got an array of shape ",
                                       py::str(given.attr("shape")).cast<std::string>()));
  }
  Array array(shape.element_type(), std::vector<int64_t>(dims.begin(), dims.end()));
  if (is_float) {
    auto values = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(given);
    if (!values) throw py::error_already_set();
    for (int64_t k = 0; k < array.size(); ++k) array.SetDouble(k, values.data()[k]);
  } else {
    // As the interpreter stores integers: u64 as its bit pattern (a view),
    // anything else converted by astype (which wraps).
    const bool u64 = given.dtype().kind() == 'u' && given.dtype().itemsize() == 8;
    py::array values = u64 ? given.attr("view")("int64") : given.attr("astype")("int64");
    auto contiguous = py::array_t<int64_t, py::array::c_style>::ensure(values);
    for (int64_t k = 0; k < array.size(); ++k) array.SetInt(k, contiguous.data()[k]);
  }
  return Value::FromArray(std::move(array));
}

// `inputs`: None (random values), a str (the inputs file format of
// docs/interpreter.md), or a sequence over devices of sequences over the
// entry's parameters (None keeps a parameter's random value).
void ApplyInputs(const py::object& inputs, const HloModule& module, const eval::DeviceGrid& grid,
                 eval::ModuleInputs* values) {
  if (inputs.is_none()) return;
  if (!py::isinstance<py::sequence>(inputs) || py::isinstance<py::str>(inputs)) {
    throw py::type_error("inputs must be None, a str (inputs file text) or a list per device");
  }
  py::sequence devices = py::reinterpret_borrow<py::sequence>(inputs);
  if (static_cast<int64_t>(py::len(devices)) != grid.devices()) {
    throw py::value_error(absl::StrCat("inputs has ", py::len(devices), " devices; the module runs on ",
                                       grid.devices()));
  }
  const HloComputation* entry = module.entry_computation();
  for (int64_t d = 0; d < grid.devices(); ++d) {
    py::sequence parameters = py::reinterpret_borrow<py::sequence>(devices[d]);
    if (!py::isinstance<py::sequence>(devices[d]) ||
        static_cast<int64_t>(py::len(parameters)) != entry->num_parameters()) {
      throw py::value_error(absl::StrCat("inputs[", d, "] must list the ", entry->num_parameters(),
                                         " entry parameters"));
    }
    for (int64_t p = 0; p < entry->num_parameters(); ++p) {
      const HloInstruction* parameter = entry->parameter_instruction(p);
      if (parameters[p].is_none() || parameter == nullptr) continue;
      (*values)[d][p] = FromPython(parameters[p], parameter->shape(),
                                   absl::StrCat("inputs[", d, "][", p, "]"));
    }
  }
}

eval::InterpreterOptions ToInterpreterOptions(const py::object& inputs,
                                              std::optional<int64_t> devices, uint64_t seed) {
  eval::InterpreterOptions options;
  options.devices = devices;
  options.seed = seed;
  if (py::isinstance<py::str>(inputs)) options.inputs_text = py::cast<std::string>(inputs);
  return options;
}

py::list Run(ModuleHandle& handle, const py::object& inputs, std::optional<int64_t> devices,
             uint64_t seed) {
  ReadGuard guard(handle);
  EnsureVerified(handle);
  eval::InterpreterOptions options = ToInterpreterOptions(inputs, devices, seed);
  const HloModule& module = *handle.module;
  absl::StatusOr<eval::RunResult> result;
  if (py::isinstance<py::str>(inputs) || inputs.is_none()) {
    py::gil_scoped_release release;
    result = eval::RunModule(module, options);
  } else {
    // Arrays given from Python: the grid and the random values first, then
    // the given ones over them (with the GIL: they are Python objects).
    absl::StatusOr<eval::DeviceGrid> grid;
    absl::StatusOr<eval::ModuleInputs> values;
    {
      py::gil_scoped_release release;
      grid = eval::ResolveDeviceGrid(module, options);
      if (grid.ok()) values = eval::MakeRandomInputs(module, *grid, seed, options.max_array_elements);
    }
    if (!grid.ok()) RaiseStatus(ErrorKind::kInterpreter, grid.status());
    if (!values.ok()) RaiseStatus(ErrorKind::kInterpreter, values.status());
    ApplyInputs(inputs, module, *grid, &*values);
    py::gil_scoped_release release;
    result = eval::RunSpmd(module, *grid, *values, options);
  }
  if (!result.ok()) RaiseStatus(ErrorKind::kInterpreter, result.status());
  return OutputsToPython(result->outputs);
}

eval::EquivalenceReport CheckEquivalence(ModuleHandle& before, ModuleHandle& after,
                                         std::optional<int64_t> devices, uint64_t seed,
                                         const py::object& inputs, std::optional<double> rtol,
                                         std::optional<double> atol) {
  if (!inputs.is_none() && !py::isinstance<py::str>(inputs)) {
    throw py::type_error("check_equivalence: inputs must be None or a str (inputs file text)");
  }
  // Guarded first: no run_passes elsewhere may change `before` while
  // `after` is being verified without the GIL.
  ReadGuard before_guard(before);
  ReadGuard after_guard(after);
  EnsureVerified(before);
  EnsureVerified(after);
  eval::EquivalenceOptions options;
  options.interpreter = ToInterpreterOptions(inputs, devices, seed);
  options.rtol = rtol;
  options.atol = atol;
  absl::StatusOr<eval::EquivalenceReport> report;
  {
    py::gil_scoped_release release;
    report = eval::CheckEquivalence(*before.module, *after.module, options);
  }
  if (!report.ok()) RaiseStatus(ErrorKind::kInterpreter, report.status());
  return *std::move(report);
}

void RegisterEquivalence(py::module_& m) {
  py::class_<eval::DeviceGrid>(m, "DeviceGrid", "The simulated devices: replicas x partitions.")
      .def_readonly("replica_count", &eval::DeviceGrid::replica_count)
      .def_readonly("num_partitions", &eval::DeviceGrid::num_partitions)
      .def_property_readonly("devices", &eval::DeviceGrid::devices)
      .def("__repr__", [](const eval::DeviceGrid& g) {
        return absl::StrCat("DeviceGrid(replica_count=", g.replica_count,
                            ", num_partitions=", g.num_partitions, ")");
      });
  py::class_<eval::Tolerance>(m, "Tolerance")
      .def_readonly("rtol", &eval::Tolerance::rtol)
      .def_readonly("atol", &eval::Tolerance::atol)
      .def("__repr__", [](const eval::Tolerance& t) {
        return absl::StrCat("Tolerance(rtol=", t.rtol, ", atol=", t.atol, ")");
      });
  py::class_<eval::OutputComparison>(m, "OutputComparison",
                                     "One output leaf compared over every device.")
      .def_readonly("output", &eval::OutputComparison::output)
      .def_readonly("shape", &eval::OutputComparison::shape)
      .def_readonly("tolerance", &eval::OutputComparison::tolerance)
      .def_readonly("max_abs_error", &eval::OutputComparison::max_abs_error)
      .def_readonly("max_rel_error", &eval::OutputComparison::max_rel_error)
      .def_readonly("ok", &eval::OutputComparison::ok)
      .def_readonly("worst_device", &eval::OutputComparison::worst_device)
      .def_readonly("worst_index", &eval::OutputComparison::worst_index)
      .def_readonly("worst_before", &eval::OutputComparison::worst_before)
      .def_readonly("worst_after", &eval::OutputComparison::worst_after)
      .def_readonly("mismatches", &eval::OutputComparison::mismatches)
      .def("__repr__", [](const eval::OutputComparison& c) {
        return absl::StrCat("<OutputComparison ", c.output, " ", c.shape, c.ok ? " ok" : " MISMATCH",
                            ">");
      });
  py::class_<eval::EquivalenceReport>(m, "EquivalenceResult",
                                      "check_equivalence's result; true when equivalent.")
      .def_readonly("equivalent", &eval::EquivalenceReport::equivalent)
      .def_readonly("grid", &eval::EquivalenceReport::grid)
      .def_readonly("seed", &eval::EquivalenceReport::seed)
      .def_readonly("outputs", &eval::EquivalenceReport::outputs)
      .def_readonly("after_error", &eval::EquivalenceReport::after_error)
      .def("__bool__", [](const eval::EquivalenceReport& r) { return r.equivalent; })
      .def("__str__", &eval::EquivalenceReport::ToString)
      .def("__repr__", [](const eval::EquivalenceReport& r) {
        return absl::StrCat("<EquivalenceResult ", r.equivalent ? "equivalent" : "NOT equivalent",
                            ", ", r.outputs.size(), " outputs>");
      });
  m.def("check_equivalence", &CheckEquivalence, py::arg("before"), py::arg("after"), py::kw_only(),
        py::arg("devices") = py::none(), py::arg("seed") = 0, py::arg("inputs") = py::none(),
        py::arg("rtol") = py::none(), py::arg("atol") = py::none(),
        "Runs both modules on the same simulated devices and inputs and compares every output.");
}

}  // namespace

void RegisterEval(py::module_& m) {
  m.def("run", &Run, py::arg("module"), py::arg("inputs") = py::none(),
        py::arg("devices") = py::none(), py::arg("seed") = 0,
        "Runs the module on simulated devices; a list per device of the output's arrays.");
  RegisterEquivalence(m);
}

}  // namespace hilo::python
