// Reading and writing a module in any of hilo's formats: HLO text, XLA's
// binary protos (HloModuleProto, HloProto, HloSnapshot) and their text-proto
// forms. Tools call only this: LoadModule finds the format (by content, and by
// the file name where the content is ambiguous), SerializeModule writes one.
// See docs/proto-format.md.
#ifndef HILO_PROTO_MODULE_FILE_H_
#define HILO_PROTO_MODULE_FILE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/proto/hlo.pb.h"
#include "hilo/proto/wire_writer.h"
#include "hilo/text/parser.h"

namespace hilo {

enum class ModuleFormat { kText, kProto, kProtoText };

// Which XLA message a proto file holds.
enum class ProtoMessage { kHloModuleProto, kHloProto, kHloSnapshot };

// "hlo", "pb", "pbtxt".
absl::string_view ModuleFormatName(ModuleFormat format);
std::optional<ModuleFormat> ModuleFormatFromName(absl::string_view name);
// By the file name: `.pb` -> kProto, `.pbtxt`/`.textproto` -> kProtoText,
// `.hlo`/`.txt` -> kText; nullopt otherwise (and for "-").
std::optional<ModuleFormat> ModuleFormatFromPath(absl::string_view path);

// The format of `bytes` (the content of `filename`), as LoadModule decides it.
ModuleFormat DetectModuleFormat(absl::string_view bytes, absl::string_view filename);

struct LoadedModule {
  ModuleFormat format = ModuleFormat::kText;
  ProtoMessage message = ProtoMessage::kHloModuleProto;
  std::unique_ptr<HloModule> module;
  // HloProto / HloSnapshot: the message without its module (buffer
  // assignment, arguments, result, platform), serialized, so that writing
  // the same message back keeps it.
  std::string envelope;
  // HloSnapshot: the recorded arguments and result.
  std::vector<xla::LiteralProto> arguments;
  std::optional<xla::LiteralProto> result;
};

// HLO text `bytes` parsed (ParseHloModule); a parse error of bytes that look
// binary gets a note saying how protos are recognised.
// `done_before`: as ParseHloModule's (parser.h).
absl::StatusOr<std::unique_ptr<HloModule>> ParseTextModule(
    absl::string_view bytes, absl::string_view filename,
    const std::function<void(size_t)>& done_before = {});

// Reads a module from `bytes` (the content of `filename`, which is used for
// messages and as a hint: a `.pb` name is read as binary, `.pbtxt` as text
// proto, `.hlo_module.pb` / `.hlo.pb` / `.snapshot.` name the message).
// Errors are InvalidArgument, prefixed with the file name.
// `done_before`: as ParseHloModule's, for binary protos too (offsets in
// `bytes` before which nothing is read again, while instructions are built).
// `done_from`: the same for the offset from which nothing is read again
// (called once, when a binary module's instructions were found).
absl::StatusOr<LoadedModule> LoadModule(absl::string_view bytes, absl::string_view filename,
                                        const std::function<void(size_t)>& done_before = {},
                                        const std::function<void(size_t)>& done_from = {});

// `module` in `format`. For the proto formats, `message` says which message
// to write; `envelope` (LoadedModule::envelope) is the rest of it.
absl::StatusOr<std::string> SerializeModule(const HloModule& module, ModuleFormat format,
                                            ProtoMessage message = ProtoMessage::kHloModuleProto,
                                            absl::string_view envelope = "");

// `module` as a binary proto, `message` (`envelope` being the rest of it),
// as SerializeModule gives it, appended to `out`: with a file, streamed to
// it (at most about a megabyte of it in memory at once), so that only the
// module and the writer's state are in memory (docs/performance.md, "Proto
// formats"). Ends with out->Finish(). On an error, what was written is
// incomplete: the caller discards it (a temporary file, removed).
absl::Status WriteBinaryModule(const HloModule& module, ProtoMessage message, absl::string_view envelope,
                               WireWriter* out);

}  // namespace hilo

#endif  // HILO_PROTO_MODULE_FILE_H_
