// Opaque parts of a module as uninterpreted functions (issue 17, item 3).
//
// A custom-call the interpreter does not know, a constant whose value is
// elided (`{...}`) and randomness (rng, rng-bit-generator,
// rng-get-and-update-state) do not stop a run: each gets a deterministic
// pseudo-random value derived from its identity, the same before and after a
// rewrite, so everything around it is still compared on numbers:
//
// - custom-call: (target, backend_config, opaque, result shape, the operand
//   values of this device, bit for bit). Not the instruction's name, so a
//   pass that renames or clones the call keeps its value; a pass that changes
//   its inputs changes its value (and is caught, see docs/interpreter.md).
// - elided constant: (name, shape): the value is unknown, but it is the same
//   constant on both sides as long as the passes keep its name.
// - rng*: (opcode, name, distribution/algorithm, result shape, operand
//   values): an rng with the same name and inputs draws the same numbers.
//
// Custom-calls with a documented identity meaning in XLA (`Sharding`,
// `xla.sdy.FuncResultSharding`, `annotate_device_placement`, `MoveToDevice`,
// `MoveToHost`) are not opaque: they pass their operand on.
#ifndef HILO_EVAL_UNINTERPRETED_H_
#define HILO_EVAL_UNINTERPRETED_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hilo/eval/value.h"
#include "hilo/ir/hlo_instruction.h"

namespace hilo {
namespace eval {

// A custom-call XLA defines as the identity on its single operand.
bool IsIdentityCustomCall(const HloInstruction& instr);
// True for the instructions evaluated as uninterpreted functions (above);
// the AwsNeuronCollectiveMatmul kernel and identity custom-calls are not.
bool IsUninterpreted(const HloInstruction& instr);
// How reports name the part: "custom-call AwsNeuronTransferWithStaticRing",
// "elided constant", "rng", "rng-bit-generator"...
std::string UninterpretedKind(const HloInstruction& instr);
// The part's value on operands `operands` (pseudo-random, see FillPseudoRandom).
absl::StatusOr<Value> UninterpretedValue(const HloInstruction& instr,
                                         absl::Span<const Value* const> operands);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_UNINTERPRETED_H_
