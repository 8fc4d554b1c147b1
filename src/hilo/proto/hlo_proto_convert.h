// Conversion between hilo's IR and XLA's HloModuleProto (hlo.proto).
//
// Writing maps every attribute hilo models to XLA's field for it, assigning
// ids as XLA does (docs/proto-format.md); what XLA's fields can not say (the
// text's print style, attribute order, attribute text no XLA field gives back
// exactly) goes into hilo's own `hilo_text` fields, which XLA ignores. So a
// module read from text, written as a proto and read back prints exactly as
// the text did.
//
// Reading accepts what XLA writes: any unique ids (64-bit ids carrying the
// computation's id in the high bits included; operand ids may then be the
// local low 32 bits), callees before callers. Fields hilo does not model are
// kept, serialized, on the IR object they belong to and written back
// unchanged. Malformed input (ids pointing nowhere, duplicate ids, cycles, a
// computation called before it is defined, unknown opcodes, absurd sizes) is
// an InvalidArgument error naming the computation and instruction.
#ifndef HILO_PROTO_HLO_PROTO_CONVERT_H_
#define HILO_PROTO_HLO_PROTO_CONVERT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/proto/hlo.pb.h"
#include "hilo/proto/wire_writer.h"

namespace hilo {

// Consumes `proto` (mapped fields are cleared from it as they are read; what
// is left is what hilo keeps opaque).
absl::StatusOr<std::unique_ptr<HloModule>> HloModuleFromProto(xla::HloModuleProto& proto);

// The binary HloModuleProto `bytes`, read without building the whole
// message: its computations and their instructions are found as slices of
// `bytes`, each instruction parsed into one reused message and built, the
// rest (module and computation fields, unknown fields) parsed by protobuf
// as it would be in the whole message. `recursion_budget` is what
// protobuf's parser allows below the module at its depth in the file
// (DefaultProtoRecursionBudget() minus the envelopes around it), so that
// exactly the files protobuf parses are read. Errors: DataLoss when `bytes`
// do not parse as an HloModuleProto, NotFound when it has no computations,
// InvalidArgument (as HloModuleFromProto) for a message that parses but is
// no valid module.
// `done_before`, when set, is called as the instructions are built with an
// address in `bytes` before which nothing is read again (unless decoding
// fails: the error path reads every instruction's bytes again), so that a
// caller can give a mapped input's pages back as the text parser's
// `done_before` does (InputBuffer::DropPagesBefore; docs/performance.md).
// `done_from`, when set, is called once the instructions were found with
// the end of the last one: nothing from there on is read again (the
// module's and computations' other fields were read), unless decoding fails.
absl::StatusOr<std::unique_ptr<HloModule>> HloModuleFromBytes(
    absl::string_view bytes, int recursion_budget,
    const std::function<void(const char*)>& done_before = {},
    const std::function<void(const char*)>& done_from = {});

// Whether HloModuleFromBytes and HloModuleToBytes read and write each
// instruction's common fields straight from and to the wire bytes (the
// default), or every instruction through protobuf's generated message
// (HILO_PROTO_GENERATED=1 in the environment, or false here: the path to
// compare with, docs/performance.md "Proto formats"). Both give the same
// modules and accept the same bytes.
bool UseHandWrittenProtoCodec();
void SetHandWrittenProtoCodec(bool on);

absl::StatusOr<xla::HloModuleProto> HloModuleToProto(const HloModule& module);
// Into an empty `proto`, which may live on an arena (faster for large modules).
absl::Status HloModuleToProto(const HloModule& module, xla::HloModuleProto* proto);
// The binary HloModuleProto, written one instruction message at a time (the
// same message HloModuleToProto gives, its fields in another order).
absl::StatusOr<std::string> HloModuleToBytes(const HloModule& module);
// The same bytes appended to `out` (streamed to its file, if it has one).
absl::Status HloModuleToWire(const HloModule& module, WireWriter* out);
// What WireWriter::Begin is told to expect of `comp`'s bytes in the proto: a
// lower bound (each instruction has at least a name, an opcode, a shape and
// a header; a guess too short only costs moving the payload once).
uint64_t ComputationBytesGuess(const HloComputation& comp);
// Appends `message`'s wire form to `out`, map fields in key order. Protobuf's
// own order for a map follows its hash table, whose seed changes from run to
// run: a scheduled module's `schedule.sequences` and frontend attributes
// written through the generated message came out in a different order each
// run. Every message hilo writes goes through here.
void AppendDeterministicBytes(const google::protobuf::MessageLite& message, std::string* out);
std::string DeterministicBytes(const google::protobuf::MessageLite& message);
// The same, `cached_size` being what message.ByteSizeLong() just returned
// (serializing reuses the sizes it cached).
void AppendDeterministicBytes(const google::protobuf::MessageLite& message, size_t cached_size,
                              std::string* out);
// Appends protobuf's wire form of length-delimited field `field` holding `payload`.
void AppendLengthDelimitedField(int field, absl::string_view payload, std::string* out);
// The same two to a WireWriter: into its buffer, or (when they are more than
// it holds) straight to its file (WireWriter::Room).
absl::Status AppendDeterministicBytes(const google::protobuf::MessageLite& message, WireWriter* out);
absl::Status AppendLengthDelimitedField(int field, absl::string_view payload, WireWriter* out);

// Shapes and literals, for snapshots' arguments and the tests.
absl::StatusOr<Shape> ShapeFromProto(const xla::ShapeProto& proto);
void ShapeToProto(const Shape& shape, xla::ShapeProto* proto);
// The literal text XLA prints for `literal` (`{1, 2}`, `1.5`, `(1, 2)`),
// or an error for element types or forms hilo can not print.
absl::StatusOr<std::string> LiteralProtoToText(const xla::LiteralProto& literal);
// The element values of every array leaf of `literal` (depth-first), each
// as the shortest text that reads back exactly (snapshots' arguments).
absl::StatusOr<std::vector<std::vector<std::string>>> LiteralLeafValues(
    const xla::LiteralProto& literal);
// The values of literal text `text` of shape `shape` as a LiteralProto.
absl::Status LiteralTextToProto(const Shape& shape, absl::string_view text,
                                xla::LiteralProto* literal);

}  // namespace hilo

#endif  // HILO_PROTO_HLO_PROTO_CONVERT_H_
