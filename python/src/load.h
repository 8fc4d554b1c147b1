// The one function hilo.load() reads a module file through.
//
// It reads every format hilo-opt reads (src/hilo/proto/module_file.h: HLO
// text, XLA's HloModuleProto / HloProto / HloSnapshot, binary or text).
#ifndef HILO_PYTHON_LOAD_H_
#define HILO_PYTHON_LOAD_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "hilo/ir/hlo_module.h"

namespace hilo::python {

struct LoadedModule {
  std::unique_ptr<HloModule> module;
  // The file's bytes when they are text the module was parsed from (error
  // locations point into them); empty for a binary format. A copy: the file
  // is read mapped, and a module lives long enough for its file to be
  // rewritten or truncated meanwhile (reading a truncated mapping is SIGBUS).
  std::string text;
};

// A file that can not be read is NotFound / PermissionDenied-like (the
// caller raises LoadError); a file that does not parse is InvalidArgument
// with the parser's `path:line:col: error: ...` message.
absl::StatusOr<LoadedModule> LoadModuleFile(const std::string& path);

// Whether a failed LoadModuleFile could not read the file (rather than
// parse it).
bool IsReadError(const absl::Status& status);

}  // namespace hilo::python

#endif  // HILO_PYTHON_LOAD_H_
