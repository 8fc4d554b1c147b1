// Protobuf's binary wire format, walked without building messages: how the
// streaming reader (HloModuleFromBytes, docs/proto-format.md "Reading")
// finds a module's computations and a computation's instructions as slices
// of the input, and keeps every other field's bytes for protobuf's own
// parser. A message's fields may come in any order and a field may repeat;
// parsing the concatenation of a message's fields is parsing the message, so
// "the selected field's payloads + the other fields' bytes" loses nothing.
#ifndef HILO_PROTO_WIRE_SPLIT_H_
#define HILO_PROTO_WIRE_SPLIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"

namespace hilo {

// What protobuf's parser allows a top-level message (100 nested messages
// below it); a message nested k deep in the file has this minus k left.
int DefaultProtoRecursionBudget();

// Splits the message `bytes` into the payloads of length-delimited field
// `field` (views into `bytes`, in order) and the bytes of all other fields
// (tags included, in order) appended to `*rest`. An occurrence of `field`
// with another wire type is "other" (protobuf's parser keeps it as an
// unknown field). False when `bytes` are not a well-formed message (a
// truncated field, a bad tag or wire type, an unbalanced group): then
// protobuf's parser would refuse them too.
bool SplitField(absl::string_view bytes, int field, std::vector<absl::string_view>* payloads,
                std::string* rest);

// The last value of varint field `field` at the top level of the message
// `bytes` (as protobuf's parser sees a singular field), 0 when absent;
// nullopt when `bytes` are not well-formed.
std::optional<int64_t> ScanVarintField(absl::string_view bytes, int field);

// Parses `bytes` into `message` (cleared first) as protobuf's ParseFromArray
// does, but with `recursion_budget` nested messages allowed below it (the
// budget it has at its depth in the whole file). False when they do not parse.
bool ParseAtDepth(absl::string_view bytes, int recursion_budget, google::protobuf::MessageLite* message);

// True when `bytes` parse as an xla.ProgramShapeProto with
// `recursion_budget` nested messages allowed below it: what ParseAtDepth
// answers, without building the message. Each parameter's and the result's
// ShapeProto bytes are parsed once per budget (`parsed_shapes` holds
// those that parsed, after the budget's bytes: a large entry's thousands of parameters have a few distinct
// shapes); anything unusual is left to ParseAtDepth.
bool ProgramShapeParses(absl::string_view bytes, int recursion_budget, absl::flat_hash_set<std::string>* parsed_shapes);

// The fields of an xla.HloInstructionProto the reader uses for every
// instruction, read straight from its wire bytes (the hand-written reader,
// docs/proto-format.md "Reading"): strings and sub-messages are views into
// the bytes. Every other field's bytes (tags included, in order) go to
// `rest`, for protobuf's parser. Reused between instructions.
struct WireInstruction {
  absl::string_view name, opcode, shape, metadata;
  bool has_shape = false, has_metadata = false;
  int64_t id = 0, parameter_number = 0, tuple_index = 0, channel_id = 0;
  std::vector<int64_t> operand_ids, control_predecessor_ids, called_computation_ids, dimensions;
  // hilo_text, when it holds nothing but `flags` and `attribute_order`
  // (else it is in `rest`).
  bool has_text = false, has_flags = false;
  uint32_t flags = 0;
  std::vector<int32_t> attribute_order;
  // replica_groups (field 49): every occurrence's bytes, tags included (equal
  // bytes, equal groups: ReadReplicaGroups reads them once per distinct
  // bytes), and how many. A view of the instruction's bytes: occurrences
  // apart (another field between them) are refused (protobuf reads the
  // instruction); copied, they were 1.5% of reading the 300k module.
  absl::string_view replica_groups;
  size_t group_count = 0;
  // frontend_attributes: the field's payload (ReadFrontendAttributes reads
  // it once per distinct bytes).
  bool has_frontend_attributes = false;
  absl::string_view frontend_attributes;
  // dot_dimension_numbers: lhs/rhs contracting, lhs/rhs batch.
  bool has_dot = false;
  std::vector<int64_t> dot[4];
  std::string rest;
};

// Reads the instruction `bytes` into `*out`. False when anything is unusual
// (bytes protobuf might refuse or read otherwise: a malformed field, a
// group, a read field in another wire type, a sub-message given twice, which
// protobuf merges, a name that is not ASCII, an overlong varint): the caller
// then lets protobuf parse the instruction instead. So whatever this
// accepts, protobuf reads the same way.
bool ReadWireInstruction(absl::string_view bytes, WireInstruction* out);

// The replica groups of an instruction's replica_groups fields `fields`
// (WireInstruction::replica_groups), each holding only replica_ids. False
// when anything is unusual (then protobuf reads the instruction).
bool ReadReplicaGroups(absl::string_view fields, std::vector<std::vector<int64_t>>* groups);

// The entries of a FrontendAttributes message `payload`, the last of a key
// winning, each key and value ASCII; false otherwise (as ReadReplicaGroups).
bool ReadFrontendAttributes(absl::string_view payload,
                            std::vector<std::pair<absl::string_view, absl::string_view>>* entries);

// The payloads as one message (a field repeated is merged: its payloads
// concatenated). A single payload is returned as is, without a copy.
absl::string_view JoinPayloads(const std::vector<absl::string_view>& payloads, std::string* storage);

}  // namespace hilo

#endif  // HILO_PROTO_WIRE_SPLIT_H_
