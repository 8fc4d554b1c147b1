#include "module_handle.h"

#include "errors.h"

namespace hilo::python {

void ModuleHandle::RefreshLiveSets() {
  if (live_generation == generation) return;
  live_instructions.clear();
  live_computations.clear();
  std::vector<HloInstruction*> instructions;
  instructions.reserve(module->instruction_count());
  for (const HloComputation* computation : module->computations()) {
    live_computations.insert(computation);
    computation->AppendInstructionsTo(&instructions);
  }
  live_instructions.insert(instructions.begin(), instructions.end());
  live_generation = generation;
}

void CheckNotWriting(const ModuleHandle& handle) {
  if (handle.writing) {
    RaiseError(ErrorKind::kModuleBusy,
               "the module is being changed by run_passes on another thread");
  }
}

ReadGuard::ReadGuard(ModuleHandle& handle) : handle_(handle) {
  CheckNotWriting(handle);
  ++handle_.readers;
}

WriteGuard::WriteGuard(ModuleHandle& handle) : handle_(handle) {
  CheckNotWriting(handle);
  if (handle.readers > 0) {
    RaiseError(ErrorKind::kModuleBusy, "the module is being read on another thread");
  }
  handle_.writing = true;
  handle_.shape_objects.clear();
}

WriteGuard::~WriteGuard() {
  handle_.writing = false;
  if (changed_) ++handle_.generation;
}

}  // namespace hilo::python
