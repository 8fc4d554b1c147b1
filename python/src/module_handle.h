// ModuleHandle: what a Python hilo.Module and every view into it share.
//
// Ownership. A Python Module, and every Computation and Instruction view
// taken from it, holds a std::shared_ptr<ModuleHandle>: the C++ module lives
// as long as any of them, so a view that outlives its Module object keeps
// working (it never points into freed memory).
//
// Views and changes. A view holds a raw pointer plus what identifies the
// object (an instruction's unique id). Each change of the module
// (run_passes) bumps `generation`; a view made in an older generation
// checks, before it reads, that its object is still in the module (the set
// of live objects is rebuilt once per generation, on the first such check):
// an instruction a pass removed raises hilo.StaleViewError instead of being
// read (dce may free it with its computation).
//
// Threads. Parsing, passes, printing and interpretation run with the GIL
// released. Readers that run without the GIL (to_text, save, verify, run)
// count themselves in `readers`; run_passes sets `writing`. Both are only
// touched with the GIL held, so no atomics: a writer waits for nobody, it
// refuses (hilo.ModuleBusyError) a module that is being read or written on
// another thread, and views refuse to read a module being written.
#ifndef HILO_PYTHON_MODULE_HANDLE_H_
#define HILO_PYTHON_MODULE_HANDLE_H_

#include <cstdint>
#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"

namespace hilo::python {

namespace py = pybind11;

struct ModuleHandle {
  std::unique_ptr<HloModule> module;
  // The file name errors show ("<string>" for parse() without one).
  std::string display;
  // The text the module was parsed from, for error locations: a view into
  // `source_object` (the Python str or bytes given to parse(), kept alive,
  // no copy) or into `source_file` (a copy of the file load() read).
  py::object source_object;
  std::string source_file;
  absl::string_view source;

  // Bumped by every change of the module.
  uint64_t generation = 0;
  // The generation the verifier last accepted, or -1.
  int64_t verified_generation = -1;
  int readers = 0;
  bool writing = false;

  // The objects in the module at `live_generation` (see the top comment).
  uint64_t live_generation = UINT64_MAX;
  absl::flat_hash_set<const HloInstruction*> live_instructions;
  absl::flat_hash_set<const HloComputation*> live_computations;

  // The Python Shape object of each shape the instructions share (a module
  // has few): `instruction.shape` returns the same object for all of them
  // instead of making one per call. Emptied when the module is changed, so
  // that the passes' copy-on-write shapes see no extra holder.
  absl::flat_hash_map<const Shape*, py::object> shape_objects;

  bool unchanged() const { return generation == 0; }
  bool verified() const { return verified_generation == static_cast<int64_t>(generation); }
  // Rebuilds the live sets if the module changed since they were built.
  void RefreshLiveSets();
};

using ModuleRef = std::shared_ptr<ModuleHandle>;

// For the duration of a read without the GIL: refuses a module being
// written. Construct and destroy with the GIL held.
class ReadGuard {
 public:
  explicit ReadGuard(ModuleHandle& handle);
  ~ReadGuard() { --handle_.readers; }
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

 private:
  ModuleHandle& handle_;
};

// For the duration of a change without the GIL: refuses a module being read
// or written elsewhere; bumps the generation when done if `changed()` was
// set (or on failure: what a failed pass left is a change too).
class WriteGuard {
 public:
  explicit WriteGuard(ModuleHandle& handle);
  ~WriteGuard();
  WriteGuard(const WriteGuard&) = delete;
  WriteGuard& operator=(const WriteGuard&) = delete;
  void set_changed(bool changed) { changed_ = changed; }

 private:
  ModuleHandle& handle_;
  bool changed_ = true;
};

// Raises hilo.ModuleBusyError if the module is being written on another thread.
void CheckNotWriting(const ModuleHandle& handle);

}  // namespace hilo::python

#endif  // HILO_PYTHON_MODULE_HANDLE_H_
