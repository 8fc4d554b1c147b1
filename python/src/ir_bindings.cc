// hilo.Module, Computation, Instruction, Shape; parse, load, verify.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "errors.h"
#include "common/file_io.h"
#include "hilo/proto/module_file.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_opcode.h"
#include "hilo/ir/primitive_type.h"
#include "hilo/ir/shared_shape.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "load.h"
#include "views.h"

namespace hilo::python {

const HloComputation& ComputationView::Get() {
  CheckNotWriting(*handle_);
  if (generation_ != handle_->generation) {
    handle_->RefreshLiveSets();
    if (!handle_->live_computations.contains(computation_) || computation_->name() != name_) {
      RaiseError(ErrorKind::kStaleView,
                 absl::StrCat("computation '", name_,
                              "' is no longer in the module (a pass removed it)"));
    }
    generation_ = handle_->generation;
  }
  return *computation_;
}

const HloInstruction& InstructionView::Get() {
  CheckNotWriting(*handle_);
  if (generation_ != handle_->generation) {
    handle_->RefreshLiveSets();
    // Only a live pointer is dereferenced.
    if (!handle_->live_instructions.contains(instruction_) ||
        instruction_->unique_id() != unique_id_) {
      RaiseError(ErrorKind::kStaleView,
                 absl::StrCat("instruction '", name_,
                              "' is no longer in the module (a pass removed it)"));
    }
    generation_ = handle_->generation;
  }
  return *instruction_;
}

py::list InstructionList(const ModuleRef& handle, absl::Span<const HloInstruction* const> list) {
  py::list out(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    out[i] = py::cast(InstructionView(handle, list[i]));
  }
  return out;
}

py::list ComputationList(const ModuleRef& handle, absl::Span<const HloComputation* const> list) {
  py::list out(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    out[i] = py::cast(ComputationView(handle, list[i]));
  }
  return out;
}

void EnsureVerified(ModuleHandle& handle) {
  if (handle.verified()) return;
  absl::Status status;
  {
    ReadGuard guard(handle);
    py::gil_scoped_release release;
    status = VerifyHloModule(*handle.module);
  }
  if (!status.ok()) RaiseStatus(ErrorKind::kVerify, status, &handle);
  handle.verified_generation = static_cast<int64_t>(handle.generation);
}

namespace {

// A shape, shared with the instructions that have it (no copy).
class ShapeView {
 public:
  explicit ShapeView(SharedShape shape) : shape_(std::move(shape)) {}
  const Shape& get() const { return shape_.get(); }

 private:
  SharedShape shape_;
};

// `instruction.shape`: the module's one Python Shape object for the
// instruction's shared shape (ModuleHandle::shape_objects).
py::object ShapeObject(ModuleHandle& handle, const HloInstruction& instruction) {
  py::object& cached = handle.shape_objects[&instruction.shape()];
  if (!cached) cached = py::cast(ShapeView(instruction.shared_shape()));
  return cached;
}

// Opcode names as interned Python strings, made once per opcode.
py::object OpcodeObject(HloOpcode opcode) {
  static py::object* const names = new py::object[256];
  py::object& name = names[static_cast<uint8_t>(opcode)];
  if (!name) {
    absl::string_view text = HloOpcodeString(opcode);
    name = py::reinterpret_steal<py::object>(
        PyUnicode_InternFromString(std::string(text).c_str()));
  }
  return name;
}

py::object OptionalInt(const std::optional<int64_t>& value) {
  return value.has_value() ? py::object(py::int_(*value)) : py::object(py::none());
}

// Expanded groups ([[0, 1], [2, 3]]), the text of a form that does not
// expand (`mesh[...]`), or None.
py::object ReplicaGroupsObject(const HloInstruction& instruction) {
  const std::optional<ReplicaGroups>& groups = instruction.replica_groups();
  if (!groups.has_value()) return py::none();
  absl::StatusOr<std::vector<std::vector<int64_t>>> expanded = groups->Expand();
  if (!expanded.ok()) return py::str(groups->ToString());
  return py::cast(*expanded);
}

py::dict FrontendAttributesDict(const HloInstruction& instruction) {
  py::dict out;
  for (const auto& [key, value] : instruction.frontend_attributes().entries()) {
    out[py::str(key)] = py::str(value);
  }
  return out;
}

// Keeps a Python str or bytes alive and views its UTF-8 bytes (for an ASCII
// str, CPython's own buffer: no copy).
absl::string_view SourceBytes(const py::object& text) {
  if (py::isinstance<py::bytes>(text)) {
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(text.ptr(), &data, &size) != 0) throw py::error_already_set();
    return absl::string_view(data, static_cast<size_t>(size));
  }
  if (!py::isinstance<py::str>(text)) throw py::type_error("parse() takes HLO text as str or bytes");
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data == nullptr) throw py::error_already_set();
  return absl::string_view(data, static_cast<size_t>(size));
}

// Takes a parsed module (or raises for its parse error), verifies it if
// asked.
ModuleRef Adopt(std::shared_ptr<ModuleHandle> handle,
                absl::StatusOr<std::unique_ptr<HloModule>> parsed, bool verify) {
  if (!parsed.ok()) RaiseStatus(ErrorKind::kParse, parsed.status(), handle.get());
  handle->module = *std::move(parsed);
  if (verify) EnsureVerified(*handle);
  return handle;
}

ModuleRef Parse(py::object text, std::string filename, bool verify) {
  auto handle = std::make_shared<ModuleHandle>();
  handle->display = std::move(filename);
  handle->source = SourceBytes(text);
  handle->source_object = std::move(text);
  absl::StatusOr<std::unique_ptr<HloModule>> parsed;
  {
    py::gil_scoped_release release;
    parsed = ParseHloModule(handle->source, handle->display);
  }
  return Adopt(std::move(handle), std::move(parsed), verify);
}

ModuleRef Load(const std::string& path, bool verify) {
  auto handle = std::make_shared<ModuleHandle>();
  handle->display = path;
  absl::StatusOr<LoadedModule> loaded;
  {
    py::gil_scoped_release release;
    loaded = LoadModuleFile(path);
  }
  if (!loaded.ok()) {
    RaiseStatus(IsReadError(loaded.status()) ? ErrorKind::kLoad : ErrorKind::kParse,
                loaded.status(), handle.get());
  }
  handle->source_file = std::move(loaded->text);
  handle->source = handle->source_file;
  return Adopt(std::move(handle), std::move(loaded->module), verify);
}

std::string ToText(ModuleHandle& handle) {
  ReadGuard guard(handle);
  py::gil_scoped_release release;
  return PrintHloModule(*handle.module);
}

void Save(ModuleHandle& handle, const std::string& path) {
  absl::Status status;
  {
    ReadGuard guard(handle);
    py::gil_scoped_release release;
    // Streamed into a temporary file renamed over `path` at the end: on an
    // error `path` is untouched.
    // A `.pb` / `.pbtxt` / `.textproto` path gets XLA's HloModuleProto.
    const std::optional<ModuleFormat> format = ModuleFormatFromPath(path);
    const bool proto = format.has_value() && *format != ModuleFormat::kText;
    absl::StatusOr<std::string> bytes = std::string();
    if (proto) bytes = SerializeModule(*handle.module, *format);
    AtomicFileWriter file;
    status = bytes.status();
    if (status.ok()) status = file.Open(path);
    if (status.ok() && proto) {
      status = file.Write(*bytes);
    } else if (status.ok()) {
      class FileSink final : public OutputSink {
       public:
        explicit FileSink(AtomicFileWriter& file) : file_(file) {}
        absl::Status Write(absl::string_view text) override { return file_.Write(text); }

       private:
        AtomicFileWriter& file_;
      } sink(file);
      status = PrintHloModule(*handle.module, sink);
    }
    if (status.ok()) status = file.Commit();
  }
  if (!status.ok()) RaiseStatus(ErrorKind::kLoad, status);
}

void Verify(ModuleHandle& handle) {
  handle.verified_generation = -1;  // always verify again when asked
  EnsureVerified(handle);
}

std::vector<const HloInstruction*> AllInstructions(const HloModule& module) {
  std::vector<HloInstruction*> all;
  all.reserve(module.instruction_count());
  for (const HloComputation* computation : module.computations()) {
    computation->AppendInstructionsTo(&all);
  }
  return {all.begin(), all.end()};
}

std::vector<const HloComputation*> Computations(const HloModule& module) {
  std::vector<HloComputation*> list = module.computations();
  return {list.begin(), list.end()};
}

const HloModule& ModuleOf(ModuleHandle& handle) {
  CheckNotWriting(handle);
  return *handle.module;
}

}  // namespace

void RegisterIr(py::module_& m) {
  py::class_<ShapeView>(m, "Shape", "The shape of an instruction's value (immutable).")
      .def_property_readonly(
          "element_type",
          [](const ShapeView& s) { return std::string(PrimitiveTypeName(s.get().element_type())); },
          "XLA's name of the element type: 'f32', 'bf16', 'pred', 'tuple', 'token'...")
      .def_property_readonly(
          "dimensions",
          [](const ShapeView& s) {
            absl::Span<const int64_t> dims = s.get().dimensions();
            return py::tuple(py::cast(std::vector<int64_t>(dims.begin(), dims.end())));
          },
          "The dimension sizes (() for a scalar or a tuple).")
      .def_property_readonly("rank", [](const ShapeView& s) { return s.get().rank(); })
      .def_property_readonly("is_tuple", [](const ShapeView& s) { return s.get().IsTuple(); })
      .def_property_readonly("is_array", [](const ShapeView& s) { return s.get().IsArray(); })
      .def_property_readonly(
          "tuple_shapes",
          [](const ShapeView& s) {
            std::vector<ShapeView> out;
            for (const Shape& element : s.get().tuple_shapes()) {
              out.emplace_back(SharedShape(element));
            }
            return out;
          },
          "The element shapes of a tuple ([] otherwise).")
      .def_property_readonly(
          "layout",
          [](const ShapeView& s) -> py::object {
            if (!s.get().has_layout()) return py::none();
            const auto& minor_to_major = s.get().layout().minor_to_major;
            return py::tuple(
                py::cast(std::vector<int64_t>(minor_to_major.begin(), minor_to_major.end())));
          },
          "minor_to_major of the layout, or None when the shape has none.")
      .def("__str__", [](const ShapeView& s) { return s.get().ToString(); })
      .def("__repr__", [](const ShapeView& s) { return "<hilo.Shape " + s.get().ToString() + ">"; })
      .def("__eq__", [](const ShapeView& a, const ShapeView& b) { return a.get() == b.get(); })
      .def("__eq__", [](const ShapeView& a, const std::string& b) { return a.get().ToString() == b; })
      .def("__hash__", [](const ShapeView& s) { return py::hash(py::str(s.get().ToString())); });

  py::class_<InstructionView>(m, "Instruction",
                              "A read-only view of one instruction; keeps its module alive.")
      .def_property_readonly("name",
                             [](InstructionView& v) {
                               const absl::string_view name = v.Get().name();
                               return py::str(name.data(), name.size());
                             })
      .def_property_readonly(
          "opcode", [](InstructionView& v) { return OpcodeObject(v.Get().opcode()); },
          "XLA's opcode name: 'all-reduce', 'dot', 'custom-call'...")
      .def_property_readonly(
          "shape", [](InstructionView& v) { return ShapeObject(*v.handle(), v.Get()); },
          "The shape (one Shape object per distinct shape of the module).")
      .def_property_readonly(
          "operands",
          [](InstructionView& v) {
            const auto& operands = v.Get().operands();
            return InstructionList(v.handle(), {operands.data(), operands.size()});
          })
      .def_property_readonly(
          "users",
          [](InstructionView& v) {
            const auto& users = v.Get().users();
            return InstructionList(v.handle(), {users.data(), users.size()});
          })
      .def_property_readonly(
          "attributes",
          [](InstructionView& v) {
            py::dict out;
            for (auto& [name, value] : PrintHloAttributes(v.Get())) {
              out[py::str(name)] = py::str(value);
            }
            return out;
          },
          "Every attribute as printed, in print order: {'channel_id': '5', ...} (text values).")
      .def_property_readonly("frontend_attributes",
                             [](InstructionView& v) { return FrontendAttributesDict(v.Get()); })
      .def_property_readonly("channel_id",
                             [](InstructionView& v) { return OptionalInt(v.Get().channel_id()); })
      .def_property_readonly(
          "replica_groups", [](InstructionView& v) { return ReplicaGroupsObject(v.Get()); },
          "The groups as lists of ids (iota form expanded), the text of a form that does not "
          "expand, or None.")
      .def_property_readonly(
          "metadata",
          [](InstructionView& v) -> py::object {
            absl::string_view metadata = v.Get().metadata();
            if (metadata.empty()) return py::none();
            return py::str(metadata.data(), metadata.size());
          },
          "The metadata={...} text, or None.")
      .def_property_readonly(
          "custom_call_target",
          [](InstructionView& v) -> py::object {
            const HloInstruction& instruction = v.Get();
            if (instruction.opcode() != HloOpcode::kCustomCall) return py::none();
            return py::str(instruction.custom_call_target());
          })
      .def_property_readonly(
          "parameter_number",
          [](InstructionView& v) -> py::object {
            int64_t number = v.Get().parameter_number();
            return number < 0 ? py::object(py::none()) : py::object(py::int_(number));
          })
      .def_property_readonly(
          "called_computations",
          [](InstructionView& v) {
            std::vector<HloComputation*> called = v.Get().called_computations();
            return ComputationList(v.handle(), {called.data(), called.size()});
          })
      .def_property_readonly(
          "computation",
          [](InstructionView& v) { return ComputationView(v.handle(), v.Get().parent()); })
      .def_property_readonly("unique_id", [](InstructionView& v) { return v.Get().unique_id(); })
      .def_property_readonly("module", [](InstructionView& v) { return v.handle(); })
      .def("__str__", [](InstructionView& v) { return PrintHloInstruction(v.Get()); })
      .def("__repr__",
           [](InstructionView& v) {
             return absl::StrCat("<hilo.Instruction ", v.name(), ">");
           })
      .def("__eq__", [](const InstructionView& a, const InstructionView& b) { return a == b; })
      .def("__hash__", &InstructionView::Hash);

  py::class_<ComputationView>(m, "Computation",
                              "A read-only view of one computation; keeps its module alive.")
      .def_property_readonly("name",
                             [](ComputationView& v) {
                               const absl::string_view name = v.Get().name();
                               return py::str(name.data(), name.size());
                             })
      .def_property_readonly(
          "instructions",
          [](ComputationView& v) {
            std::vector<HloInstruction*> list = v.Get().instructions();
            return InstructionList(v.handle(), {list.data(), list.size()});
          },
          "The instructions in the order written (pass-created ones last).")
      .def_property_readonly(
          "parameters",
          [](ComputationView& v) {
            const auto& parameters = v.Get().parameter_instructions();
            return InstructionList(v.handle(), {parameters.data(), parameters.size()});
          })
      .def_property_readonly(
          "root",
          [](ComputationView& v) -> py::object {
            const HloInstruction* root = v.Get().root_instruction();
            if (root == nullptr) return py::none();
            return py::cast(InstructionView(v.handle(), root));
          })
      .def_property_readonly("is_entry",
                             [](ComputationView& v) { return v.Get().IsEntryComputation(); })
      .def_property_readonly("module", [](ComputationView& v) { return v.handle(); })
      .def("__len__", [](ComputationView& v) { return v.Get().instruction_count(); })
      .def("__repr__",
           [](ComputationView& v) { return absl::StrCat("<hilo.Computation ", v.name(), ">"); })
      .def("__eq__", [](const ComputationView& a, const ComputationView& b) { return a == b; })
      .def("__hash__", &ComputationView::Hash);

  py::class_<ModuleHandle, ModuleRef>(m, "Module", "An HLO module (hilo.parse, hilo.load).")
      .def_property_readonly("name", [](ModuleHandle& h) { return ModuleOf(h).name(); })
      .def_property_readonly(
          "computations",
          [](const ModuleRef& h) {
            std::vector<const HloComputation*> list = Computations(ModuleOf(*h));
            return ComputationList(h, list);
          },
          "The computations in module order.")
      .def_property_readonly(
          "entry_computation",
          [](const ModuleRef& h) -> py::object {
            const HloComputation* entry = ModuleOf(*h).entry_computation();
            if (entry == nullptr) return py::none();
            return py::cast(ComputationView(h, entry));
          })
      .def_property_readonly(
          "instructions",
          [](const ModuleRef& h) { return InstructionList(h, AllInstructions(ModuleOf(*h))); },
          "Every instruction of every computation, in module order.")
      .def_property_readonly("instruction_count",
                             [](ModuleHandle& h) { return ModuleOf(h).instruction_count(); })
      .def_property_readonly("replica_count",
                             [](ModuleHandle& h) { return OptionalInt(ModuleOf(h).replica_count()); })
      .def_property_readonly("num_partitions",
                             [](ModuleHandle& h) { return OptionalInt(ModuleOf(h).num_partitions()); })
      .def_property_readonly(
          "header_attributes",
          [](ModuleHandle& h) {
            py::dict out;
            for (const HeaderAttribute& a : ModuleOf(h).header_attributes()) {
              out[py::str(a.name)] = py::str(a.value);
            }
            return out;
          },
          "The other `HloModule` header attributes, as written.")
      .def_property_readonly("source_file", [](ModuleHandle& h) { return h.display; },
                             "The file name the module was parsed or loaded as.")
      .def(
          "computation",
          [](const ModuleRef& h, const std::string& name) {
            const HloComputation* computation = ModuleOf(*h).GetComputationWithName(name);
            if (computation == nullptr) throw py::key_error("no computation named '" + name + "'");
            return ComputationView(h, computation);
          },
          py::arg("name"), "The computation called `name` (KeyError if none).")
      .def("to_text", &ToText, "The module in HLO text, as hilo-opt prints it.")
      .def("__str__", &ToText)
      .def("save", &Save, py::arg("path"),
           "Writes the module's HLO text to `path` (atomically: on an error the file is untouched).")
      .def("__repr__", [](ModuleHandle& h) {
        return absl::StrCat("<hilo.Module ", ModuleOf(h).name(), ", ",
                            ModuleOf(h).instruction_count(), " instructions>");
      });

  m.def("parse", &Parse, py::arg("text"), py::arg("filename") = "<string>",
        py::arg("verify") = true,
        "Parses HLO text (str or bytes) into a Module; verifies it unless verify=False. "
        "Raises ParseError / VerifyError with file, line and column.");
  m.def("load", &Load, py::arg("path"), py::arg("verify") = true,
        "Reads a module file (HLO text). Raises LoadError (unreadable), ParseError, VerifyError.");
  m.def("verify", &Verify, py::arg("module"),
        "Runs the verifier; raises VerifyError (with the location in the parsed text while "
        "the module is unchanged).");
}

}  // namespace hilo::python
