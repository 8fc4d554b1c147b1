#include "hilo/proto/module_file.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/unknown_field_set.h"
#include "hilo/ir/env_switch.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/wire_split.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

absl::Status Bad(absl::string_view filename, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(filename, ": error: ", what));
}

// True when the first bytes hold control characters no text file has.
bool LooksBinary(absl::string_view bytes) {
  const size_t n = std::min<size_t>(bytes.size(), 512);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f) return true;
  }
  return false;
}

// The first field name of a text proto, or "" when the text does not start
// like one (`name: "m"`, `hlo_module {`).
absl::string_view FirstTextProtoField(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && absl::ascii_isspace(text[i])) ++i;
    if (i < text.size() && text[i] == '#') {  // a comment line
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    break;
  }
  const size_t s = i;
  while (i < text.size() && (absl::ascii_isalnum(text[i]) || text[i] == '_')) ++i;
  const absl::string_view field = text.substr(s, i - s);
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i >= text.size() || (text[i] != ':' && text[i] != '{')) return "";
  static constexpr absl::string_view kFields[] = {
      "name", "entry_computation_name", "entry_computation_id", "computations",
      "host_program_shape", "id", "schedule", "input_output_alias", "hlo_module", "hlo",
      "arguments", "result", "execution_platform", "buffer_assignment", "spmd_output_sharding",
      "device_assignment", "frontend_attributes", "buffer_donor", "is_dynamic",
      "cross_program_prefetches", "spmd_parameters_shardings", "profile_info", "stack_frame_index"};
  for (absl::string_view f : kFields) {
    if (field == f) return field;
  }
  return "";
}

class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ErrorCollector(absl::string_view filename) : filename_(filename) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ = absl::StrCat(filename_, ":", line + 1, ":", column + 1, ": error: ", message);
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string filename_;
  std::string first_;
};

template <typename Message>
absl::Status ParseText(absl::string_view text, absl::string_view filename, Message* message) {
  if (text.size() > static_cast<size_t>(INT_MAX)) return Bad(filename, "file too large for a text proto");
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors(filename);
  parser.RecordErrorsTo(&errors);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, message)) {
    return absl::InvalidArgumentError(errors.first().empty()
                                          ? absl::StrCat(filename, ": error: malformed text proto")
                                          : errors.first());
  }
  // The text format takes escapes (`"\377"`) that make a string field
  // invalid UTF-8, which the binary format (proto3, as XLA's) refuses: such a
  // module could be read here but never written for XLA. The binary parser's
  // check is the one that counts, so the message goes through it once.
  std::string wire;
  Message check;
  {
    google::protobuf::LogSilencer quiet;
    if (!message->SerializeToString(&wire) || !check.ParseFromString(wire)) {
      return Bad(filename, "a string field is not valid UTF-8 (XLA's protos require UTF-8 text)");
    }
  }
  return absl::OkStatus();
}

// Protobuf's text printer writes every NaN as `nan`; its parser reads `-nan`
// too, so the sign survives the text proto as it does HLO text (a payload
// has no text-proto spelling in either direction: docs/proto-format.md).
class SignedNanPrinter : public google::protobuf::TextFormat::FastFieldValuePrinter {
 public:
  void PrintFloat(float value, google::protobuf::TextFormat::BaseTextGenerator* out) const override {
    if (std::isnan(value) && std::signbit(value)) return out->PrintLiteral("-nan");
    FastFieldValuePrinter::PrintFloat(value, out);
  }
  void PrintDouble(double value, google::protobuf::TextFormat::BaseTextGenerator* out) const override {
    if (std::isnan(value) && std::signbit(value)) return out->PrintLiteral("-nan");
    FastFieldValuePrinter::PrintDouble(value, out);
  }
};

// The first field in `root` (or in a message inside it) that the schema does
// not declare, as "field N of xla.Type"; "" when there is none. Protobuf's
// text format prints such a field by its number, which no text parser reads
// back, so a text proto can not carry it. Iterative: messages nest deeply.
std::string FirstUndeclaredField(const google::protobuf::Message& root) {
  std::vector<const google::protobuf::Message*> pending = {&root};
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  while (!pending.empty()) {
    const google::protobuf::Message& m = *pending.back();
    pending.pop_back();
    const google::protobuf::Reflection& reflection = *m.GetReflection();
    const google::protobuf::UnknownFieldSet& unknown = reflection.GetUnknownFields(m);
    if (!unknown.empty()) {
      const int number = unknown.field(0).number();
      const bool declared = m.GetDescriptor()->FindFieldByNumber(number) != nullptr;
      return absl::StrCat("field ", number, " of ", m.GetDescriptor()->full_name(),
                          declared ? " in a wire type its declaration does not have" : "");
    }
    fields.clear();
    reflection.ListFields(m, &fields);
    for (const google::protobuf::FieldDescriptor* field : fields) {
      if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
      if (!field->is_repeated()) {
        pending.push_back(&reflection.GetMessage(m, field));
        continue;
      }
      for (int i = 0, n = reflection.FieldSize(m, field); i < n; ++i) {
        pending.push_back(&reflection.GetRepeatedMessage(m, field, i));
      }
    }
  }
  return "";
}

// How many messages deep the first field-1 chain goes before a printable
// byte: 1 for an HloModuleProto (field 1 is its name), 2 for an HloProto, 3
// for an HloSnapshot; 0 when the bytes do not start that way.
int NestingOfFirstField(absl::string_view bytes) {
  size_t i = 0;
  for (int depth = 1; depth <= 4; ++depth) {
    if (i >= bytes.size() || bytes[i] != 0x0a) return 0;
    ++i;
    // The length varint.
    while (i < bytes.size() && (static_cast<unsigned char>(bytes[i]) & 0x80)) ++i;
    ++i;
    if (i >= bytes.size()) return 0;
    if (bytes[i] != 0x0a) return depth;
  }
  return 0;
}

absl::StatusOr<LoadedModule> Convert(xla::HloModuleProto& proto, absl::string_view filename,
                                     LoadedModule loaded) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = HloModuleFromProto(proto);
  if (!module.ok()) return Bad(filename, module.status().message());
  loaded.module = *std::move(module);
  return loaded;
}

absl::string_view MessageName(ProtoMessage message) {
  switch (message) {
    case ProtoMessage::kHloModuleProto: return "HloModuleProto";
    case ProtoMessage::kHloProto: return "HloProto";
    case ProtoMessage::kHloSnapshot: return "HloSnapshot";
  }
  return "";
}

// HILO_PROTO_WHOLE_MESSAGE=1: binary modules are parsed into a whole
// HloModuleProto before they are converted (the reader before streaming;
// its cost is in docs/performance.md, "Proto formats").
bool ReadWholeMessages() {
  static const bool whole = EnvSwitchIsOne("HILO_PROTO_WHOLE_MESSAGE");
  return whole;
}

// The module of binary `bytes` read as `message`: the envelopes' fields are
// parsed by protobuf, the module is streamed (HloModuleFromBytes). Errors
// as HloModuleFromBytes: DataLoss / NotFound when the bytes are not that
// message holding a module (the caller tries another), else the module's
// error, prefixed with the file name.
absl::StatusOr<LoadedModule> ReadBinaryAs(ProtoMessage message, absl::string_view bytes,
                                          absl::string_view filename,
                                          const std::function<void(size_t)>& done_before,
                                          const std::function<void(size_t)>& done_from) {
  google::protobuf::LogSilencer quiet;  // no "invalid UTF-8" lines on stderr
  const int budget = DefaultProtoRecursionBudget();
  const absl::Status not_it = absl::DataLossError("the bytes do not parse as this message");
  LoadedModule loaded;
  loaded.format = ModuleFormat::kProto;
  loaded.message = message;
  absl::string_view module_bytes = bytes;
  int depth = 0;  // of the module in the file
  std::string module_storage, hlo_storage, rest;
  std::vector<absl::string_view> payloads;
  xla::HloProto hlo_fields;  // an HloProto but its module
  xla::HloSnapshot snapshot_fields;  // an HloSnapshot but its module
  // Field 1 of `outer` (joined when repeated, as protobuf merges it), and
  // the other fields parsed into `fields`.
  auto split = [&](absl::string_view outer, int outer_budget, google::protobuf::MessageLite* fields,
                   std::string* storage, absl::string_view* inner) {
    payloads.clear();
    rest.clear();
    if (!SplitField(outer, 1, &payloads, &rest) || !ParseAtDepth(rest, outer_budget, fields)) return false;
    *inner = JoinPayloads(payloads, storage);
    return true;
  };
  switch (message) {
    case ProtoMessage::kHloModuleProto:
      break;
    case ProtoMessage::kHloProto:
      if (!split(bytes, budget, &hlo_fields, &module_storage, &module_bytes)) return not_it;
      depth = 1;
      break;
    case ProtoMessage::kHloSnapshot: {
      absl::string_view hlo;
      if (!split(bytes, budget, &snapshot_fields, &hlo_storage, &hlo)) return not_it;
      const bool has_hlo = !payloads.empty();
      if (!split(hlo, budget - 1, &hlo_fields, &module_storage, &module_bytes)) return not_it;
      if (has_hlo) *snapshot_fields.mutable_hlo() = std::move(hlo_fields);
      depth = 2;
      break;
    }
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module;
  if (ReadWholeMessages()) {
    google::protobuf::Arena arena;
    auto* m = google::protobuf::Arena::CreateMessage<xla::HloModuleProto>(&arena);
    if (!ParseAtDepth(module_bytes, budget - depth, m) || m->computations_size() == 0) return not_it;
    module = HloModuleFromProto(*m);
  } else {
    // (A module joined from repeated fields is a copy: nothing to report.)
    auto offset_in_bytes = [&bytes](const std::function<void(size_t)>& report) {
      std::function<void(const char*)> at_address;
      if (report) {
        at_address = [&bytes, &report](const char* at) {
          if (at >= bytes.data() && at <= bytes.data() + bytes.size()) report(static_cast<size_t>(at - bytes.data()));
        };
      }
      return at_address;
    };
    module = HloModuleFromBytes(module_bytes, budget - depth, offset_in_bytes(done_before), offset_in_bytes(done_from));
  }
  if (!module.ok()) {
    const absl::StatusCode code = module.status().code();
    if (code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kNotFound) return module.status();
    return Bad(filename, module.status().message());
  }
  loaded.module = *std::move(module);
  switch (message) {
    case ProtoMessage::kHloModuleProto:
      break;
    case ProtoMessage::kHloProto:
      loaded.envelope = hlo_fields.SerializeAsString();
      break;
    case ProtoMessage::kHloSnapshot:
      loaded.arguments.assign(snapshot_fields.arguments().begin(), snapshot_fields.arguments().end());
      if (snapshot_fields.has_result()) loaded.result = snapshot_fields.result();
      loaded.envelope = snapshot_fields.SerializeAsString();
      break;
  }
  return loaded;
}

}  // namespace

absl::string_view ModuleFormatName(ModuleFormat format) {
  switch (format) {
    case ModuleFormat::kText: return "hlo";
    case ModuleFormat::kProto: return "pb";
    case ModuleFormat::kProtoText: return "pbtxt";
  }
  return "hlo";
}

std::optional<ModuleFormat> ModuleFormatFromName(absl::string_view name) {
  if (name == "hlo") return ModuleFormat::kText;
  if (name == "pb") return ModuleFormat::kProto;
  if (name == "pbtxt") return ModuleFormat::kProtoText;
  return std::nullopt;
}

std::optional<ModuleFormat> ModuleFormatFromPath(absl::string_view path) {
  if (absl::EndsWith(path, ".pb")) return ModuleFormat::kProto;
  if (absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".textproto")) {
    return ModuleFormat::kProtoText;
  }
  if (absl::EndsWith(path, ".hlo") || absl::EndsWith(path, ".txt")) return ModuleFormat::kText;
  return std::nullopt;
}

ModuleFormat DetectModuleFormat(absl::string_view bytes, absl::string_view filename) {
  const std::optional<ModuleFormat> by_name = ModuleFormatFromPath(filename);
  // A `.hlo` / `.txt` name is HLO text whatever its bytes: binary garbage in
  // it is reported by the parser (escaped), not as a failed proto.
  if (by_name != ModuleFormat::kText &&
      (LooksBinary(bytes) || (by_name == ModuleFormat::kProto && !bytes.empty()))) {
    return ModuleFormat::kProto;
  }
  if (!FirstTextProtoField(bytes).empty() || by_name == ModuleFormat::kProtoText) {
    return ModuleFormat::kProtoText;
  }
  return ModuleFormat::kText;
}

absl::StatusOr<std::unique_ptr<HloModule>> ParseTextModule(
    absl::string_view bytes, absl::string_view filename,
    const std::function<void(size_t)>& done_before) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(bytes, filename, done_before);
  if (!module.ok() && LooksBinary(bytes)) {
    return absl::Status(module.status().code(),
                        absl::StrCat(module.status().message(),
                                     "\nnote: the file is binary; XLA's binary protos are read "
                                     "by content unless the name ends in .hlo or .txt"));
  }
  return module;
}

absl::StatusOr<LoadedModule> LoadModule(absl::string_view bytes, absl::string_view filename,
                                        const std::function<void(size_t)>& done_before,
                                        const std::function<void(size_t)>& done_from) {
  LoadedModule loaded;
  const ModuleFormat format = DetectModuleFormat(bytes, filename);
  const bool binary = format == ModuleFormat::kProto;
  const absl::string_view text_field = binary ? "" : FirstTextProtoField(bytes);
  if (format == ModuleFormat::kText) {
    loaded.format = ModuleFormat::kText;
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseTextModule(bytes, filename);
    if (!module.ok()) return module.status();
    loaded.module = *std::move(module);
    return loaded;
  }
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return Bad(filename, "larger than 2 GiB, the most a protobuf message can be");
  }
  if (!binary) {
    loaded.format = ModuleFormat::kProtoText;
    if (text_field == "hlo_module" || text_field == "buffer_assignment") {
      xla::HloProto p;
      if (absl::Status s = ParseText(bytes, filename, &p); !s.ok()) return s;
      loaded.message = ProtoMessage::kHloProto;
      xla::HloModuleProto m = std::move(*p.mutable_hlo_module());
      p.clear_hlo_module();
      loaded.envelope = p.SerializeAsString();
      return Convert(m, filename, std::move(loaded));
    }
    if (text_field == "hlo" || text_field == "arguments" || text_field == "result" ||
        text_field == "execution_platform") {
      xla::HloSnapshot p;
      if (absl::Status s = ParseText(bytes, filename, &p); !s.ok()) return s;
      loaded.message = ProtoMessage::kHloSnapshot;
      xla::HloModuleProto m = std::move(*p.mutable_hlo()->mutable_hlo_module());
      p.mutable_hlo()->clear_hlo_module();
      loaded.arguments.assign(p.arguments().begin(), p.arguments().end());
      if (p.has_result()) loaded.result = p.result();
      loaded.envelope = p.SerializeAsString();
      return Convert(m, filename, std::move(loaded));
    }
    xla::HloModuleProto m;
    if (absl::Status s = ParseText(bytes, filename, &m); !s.ok()) return s;
    return Convert(m, filename, std::move(loaded));
  }
  loaded.format = ModuleFormat::kProto;
  // The three messages all start with field 1: the one that parses and
  // holds a module wins, tried in the order the file name suggests (XLA's
  // and Neuron's names: `.hlo_module.pb`, `.hlo.pb`, `.snapshot.`), else
  // snapshot, HloProto, module (a module's bytes fail fast as the others).
  std::vector<ProtoMessage> order = {ProtoMessage::kHloSnapshot, ProtoMessage::kHloProto,
                                     ProtoMessage::kHloModuleProto};
  const int nesting = NestingOfFirstField(bytes);
  if (absl::EndsWith(filename, ".hlo_module.pb") || nesting == 1) {
    order = {ProtoMessage::kHloModuleProto, ProtoMessage::kHloSnapshot, ProtoMessage::kHloProto};
  } else if (absl::EndsWith(filename, ".hlo.pb") || nesting == 2) {
    order = {ProtoMessage::kHloProto, ProtoMessage::kHloModuleProto, ProtoMessage::kHloSnapshot};
  }
  std::string note;  // why the first message type whose bytes got as far as an instruction failed
  for (ProtoMessage candidate : order) {
    absl::StatusOr<LoadedModule> out = ReadBinaryAs(candidate, bytes, filename, done_before, done_from);
    if (out.ok()) return out;
    const absl::StatusCode code = out.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kNotFound) return out.status();
    if (note.empty() && absl::StrContains(out.status().message(), ": instruction ")) {
      note = absl::StrCat("\nnote: read as an ", MessageName(candidate), ": ", out.status().message());
    }
  }
  return Bad(filename,
             absl::StrCat("not a binary xla.HloModuleProto, HloProto or HloSnapshot holding a module "
                          "(truncated, corrupt, or another message?)",
                          note));
}

absl::Status WriteBinaryModule(const HloModule& module, ProtoMessage message, absl::string_view envelope,
                               WireWriter* out) {
  // An HloProto or HloSnapshot around the module is framed by hand: field 1
  // (the module, or the HloProto), then the message's other fields.
  uint64_t guess = 0;  // a lower bound of the module's bytes, as each computation's
  if (message != ProtoMessage::kHloModuleProto) {
    for (const HloComputation* c : module.computations()) guess += ComputationBytesGuess(*c);
  }
  absl::Status status;
  switch (message) {
    case ProtoMessage::kHloModuleProto:
      status = HloModuleToWire(module, out);
      break;
    case ProtoMessage::kHloProto:
      out->Begin(1, guess);
      status = HloModuleToWire(module, out);
      if (status.ok()) status = out->End();
      if (status.ok()) status = out->Append(envelope);  // the HloProto without its module
      break;
    case ProtoMessage::kHloSnapshot: {
      xla::HloSnapshot snap;
      if (!envelope.empty() && !snap.ParseFromArray(envelope.data(), static_cast<int>(envelope.size()))) {
        return absl::InternalError("kept HloSnapshot fields do not parse");
      }
      const std::string hlo_rest = DeterministicBytes(snap.hlo());
      snap.clear_hlo();
      out->Begin(1, guess);
      out->Begin(1, guess);
      status = HloModuleToWire(module, out);
      if (status.ok()) status = out->End();
      if (status.ok()) status = out->Append(hlo_rest);
      if (status.ok()) status = out->End();
      if (status.ok()) status = AppendDeterministicBytes(snap, out);
      break;
    }
  }
  if (status.ok()) status = out->Finish();
  if (status.ok() && out->size() > static_cast<uint64_t>(INT_MAX)) {
    return absl::InvalidArgumentError("the module is larger than 2 GiB, the most a protobuf can hold");
  }
  return status;
}

absl::StatusOr<std::string> SerializeModule(const HloModule& module, ModuleFormat format,
                                            ProtoMessage message, absl::string_view envelope) {
  if (format == ModuleFormat::kText) return PrintHloModule(module);
  if (format == ModuleFormat::kProto) {
    WireWriter out;
    int64_t instructions = 0;
    for (const HloComputation* c : module.computations()) instructions += c->instruction_count();
    // (Reserved at once: a string growing by doubling holds two copies while
    // it moves; only the bytes written are memory in use.)
    out.buffer().reserve(static_cast<size_t>(instructions) * 256 + (size_t{1} << 20));
    if (absl::Status s = WriteBinaryModule(module, message, envelope, &out); !s.ok()) return s;
    return out.TakeBytes();
  }
  google::protobuf::Arena arena;
  auto* proto = google::protobuf::Arena::CreateMessage<xla::HloModuleProto>(&arena);
  google::protobuf::Message* out = proto;
  auto parse_envelope = [&](google::protobuf::Message* m) {
    return envelope.empty() || m->ParseFromArray(envelope.data(), static_cast<int>(envelope.size()));
  };
  switch (message) {
    case ProtoMessage::kHloModuleProto:
      break;
    case ProtoMessage::kHloProto: {
      auto* hp = google::protobuf::Arena::CreateMessage<xla::HloProto>(&arena);
      if (!parse_envelope(hp)) return absl::InternalError("kept HloProto fields do not parse");
      proto = hp->mutable_hlo_module();
      out = hp;
      break;
    }
    case ProtoMessage::kHloSnapshot: {
      auto* snap = google::protobuf::Arena::CreateMessage<xla::HloSnapshot>(&arena);
      if (!parse_envelope(snap)) return absl::InternalError("kept HloSnapshot fields do not parse");
      proto = snap->mutable_hlo()->mutable_hlo_module();
      out = snap;
      break;
    }
  }
  if (absl::Status s = HloModuleToProto(module, proto); !s.ok()) return s;
  std::string bytes;
  if (format == ModuleFormat::kProto) {
    const size_t size = out->ByteSizeLong();  // computes the sizes serializing uses
    if (size > static_cast<size_t>(INT_MAX)) {
      return absl::InvalidArgumentError("the module is larger than 2 GiB, the most a protobuf can hold");
    }
    AppendDeterministicBytes(*out, size, &bytes);
    return bytes;
  }
  // Refused rather than written in a form that does not read back (or
  // silently dropped): the binary format carries these fields.
  if (const std::string undeclared = FirstUndeclaredField(*out); !undeclared.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the module holds ", undeclared,
        ", which hilo's schema does not declare; a text proto can only name declared fields, "
        "so it can not carry it without loss: write a binary proto (--emit=pb) instead"));
  }
  google::protobuf::TextFormat::Printer printer;
  printer.SetDefaultFieldValuePrinter(new SignedNanPrinter());  // the printer owns it
  if (!printer.PrintToString(*out, &bytes)) {
    return absl::InternalError("printing the text proto failed");
  }
  return bytes;
}

}  // namespace hilo
