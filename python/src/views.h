// Computation and Instruction views: read-only Python objects that point
// into a module (no copy of it) and keep it alive (module_handle.h).
#ifndef HILO_PYTHON_VIEWS_H_
#define HILO_PYTHON_VIEWS_H_

#include <cstdint>
#include <string>

#include <pybind11/pybind11.h>

#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "module_handle.h"

namespace hilo::python {

namespace py = pybind11;

class ComputationView {
 public:
  ComputationView(ModuleRef handle, const HloComputation* computation)
      : handle_(std::move(handle)),
        computation_(computation),
        generation_(handle_->generation),
        name_(computation->name()) {}

  // The computation; raises StaleViewError if it left the module and
  // ModuleBusyError while the module is being changed.
  const HloComputation& Get();
  const ModuleRef& handle() const { return handle_; }
  const std::string& name() const { return name_; }
  bool operator==(const ComputationView& other) const {
    return handle_ == other.handle_ && computation_ == other.computation_;
  }
  size_t Hash() const { return std::hash<const void*>()(computation_); }

 private:
  ModuleRef handle_;
  const HloComputation* computation_;
  uint64_t generation_;
  std::string name_;  // for the message once the computation is gone
};

class InstructionView {
 public:
  InstructionView(ModuleRef handle, const HloInstruction* instruction)
      : handle_(std::move(handle)),
        instruction_(instruction),
        unique_id_(instruction->unique_id()),
        generation_(handle_->generation),
        name_(instruction->name()) {}

  // The instruction; raises StaleViewError if it left the module (a pass
  // removed it) and ModuleBusyError while the module is being changed.
  const HloInstruction& Get();
  const ModuleRef& handle() const { return handle_; }
  const std::string& name() const { return name_; }
  bool operator==(const InstructionView& other) const {
    return handle_ == other.handle_ && instruction_ == other.instruction_ &&
           unique_id_ == other.unique_id_;
  }
  size_t Hash() const { return std::hash<const void*>()(instruction_) ^ unique_id_; }

 private:
  ModuleRef handle_;
  const HloInstruction* instruction_;
  int64_t unique_id_;  // tells a new instruction at a reused address apart
  uint64_t generation_;
  std::string name_;
};

// Lists of views, built with the GIL held.
py::list InstructionList(const ModuleRef& handle, absl::Span<const HloInstruction* const> list);
py::list ComputationList(const ModuleRef& handle, absl::Span<const HloComputation* const> list);

// The module classes, parse/load/verify (ir_bindings.cc).
void RegisterIr(py::module_& m);
// run_passes, list_passes (pass_bindings.cc).
void RegisterPasses(py::module_& m);
// run, check_equivalence (eval_bindings.cc).
void RegisterEval(py::module_& m);

// Verifies the module unless it is known valid (parse verifies by default;
// run_passes keeps it verified); raises VerifyError. Passes and the
// interpreter are only given verified modules.
void EnsureVerified(ModuleHandle& handle);

}  // namespace hilo::python

#endif  // HILO_PYTHON_VIEWS_H_
