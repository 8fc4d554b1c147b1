// The attributes hilo keeps as text (HloInstruction::raw_attributes(),
// sharding()) and XLA's proto fields for them: `direction=LT` <->
// comparison_direction, `slice={[0:4]}` <-> slice_dimensions,
// `window={size=3 stride=2}` <-> window, `dim_labels=b01f_01io->b01f` <->
// convolution_dimension_numbers, gather/scatter dimension numbers, padding,
// operand_precision, fusion kind, the boolean and integer fields, and
// `sharding={...}` <-> OpSharding. Each mapping writes the text XLA's printer
// writes for the field; the writer keeps an attribute's text in hilo's own
// field when the mapping does not give it back byte for byte.
#ifndef HILO_PROTO_PROTO_TEXT_ATTRIBUTES_H_
#define HILO_PROTO_PROTO_TEXT_ATTRIBUTES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/proto/hlo.pb.h"

namespace hilo {

// Sets the XLA field of attribute `name` from its text. True when the field
// exists and reading it back (DecodeTextAttributes) gives `value` exactly;
// the field may be set even when false.
bool EncodeTextAttribute(HloOpcode opcode, absl::string_view name, absl::string_view value,
                         xla::HloInstructionProto* proto);

// Appends to `raws` the text of every mapped field set in `proto` whose
// attribute `wanted` accepts, and clears every mapped field of `proto`.
// An error for a field whose value can not be written as text.
absl::Status DecodeTextAttributes(HloOpcode opcode,
                                  absl::FunctionRef<bool(absl::string_view)> wanted,
                                  xla::HloInstructionProto* proto, std::vector<RawAttribute>* raws);
// True when DecodeTextAttributes gives a text for an instruction of `opcode`
// whose message has no field set (a batch-norm's `epsilon=0`, say): false
// means it can be skipped for such a message. Found once by running the
// mappers on an empty message, not listed by hand.
bool DecodesFromEmptyMessage(HloOpcode opcode);

// The module's header attributes with an XLA field: `input_output_alias=`
// <-> HloModuleProto.input_output_alias, `buffer_donor=` <-> buffer_donor.
// EncodeHeaderAttribute sets the field from the text (when it parses) and is
// true when DecodeHeaderAttribute gives `value` back exactly; it is false for
// any other name. DecodeHeaderAttribute gives the text XLA's printer writes
// for a set field and clears it, or nullopt when the field is unset.
bool EncodeHeaderAttribute(absl::string_view name, absl::string_view value,
                           xla::HloModuleProto* proto);
std::optional<std::string> DecodeHeaderAttribute(absl::string_view name, xla::HloModuleProto* proto);
// `entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}` into the
// parameters and result of `program_shape` (whose parameters, one per entry
// parameter, are already there): what XLA writes as host_program_shape.
// False, and `program_shape` unchanged, for a text that does not parse or
// whose parameter count differs.
bool EntryComputationLayoutToProto(absl::string_view text, xla::ProgramShapeProto* program_shape);
// The parameter and result shapes of `entry_computation_layout` text; false
// when it does not read as one.
bool EntryComputationLayoutShapes(absl::string_view text, std::vector<Shape>* parameters, Shape* result);
// The same layout cut into each parameter's shape text (split at the commas
// outside brackets, trimmed) and the result's, nothing parsed: a writer
// parses each distinct text once. False when the text is not of the form.
bool EntryComputationLayoutPieces(absl::string_view text, std::vector<absl::string_view>* parameters,
                                  absl::string_view* result);
// Their names, in the order XLA's printer writes them.
const std::vector<std::string>& MappedHeaderAttributes();

// `{replicated}`, `{maximal device=1}`, `{manual}`, `{devices=[2,1]0,1}`,
// `{devices=[4]<=[4]}`, `... last_tile_dim_replicate`, `{{...}, {...}}`.
bool ParseSharding(absl::string_view text, xla::OpSharding* sharding);
std::string RenderSharding(const xla::OpSharding& sharding);
// As RenderSharding, with an error for a sharding hilo can not write as text.
absl::StatusOr<std::string> RenderShardingChecked(const xla::OpSharding& sharding);

}  // namespace hilo

#endif  // HILO_PROTO_PROTO_TEXT_ATTRIBUTES_H_
