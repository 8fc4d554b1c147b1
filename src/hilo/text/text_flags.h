// Print-style bits the parser records and the printer reads, stored in
// HloInstruction::text_flags(), HloComputation::TextInfo::flags and
// HloModule::TextInfo::flags. An object whose flags lack kTextFlagsSet was
// not parsed (a pass created it): the printer then uses the module's style,
// and for a module that was not parsed either, XLA's default style (`%`
// prefixes, operand shapes written).
#ifndef HILO_TEXT_TEXT_FLAGS_H_
#define HILO_TEXT_TEXT_FLAGS_H_

#include <cstdint>

#include "hilo/ir/hlo_instruction.h"

namespace hilo {

inline constexpr uint32_t kTextFlagsSet = 1u << 0;
// The name was written with a `%` prefix.
inline constexpr uint32_t kTextPercentName = 1u << 1;
// Operands were written with their shapes (`f32[2]{0} %x`).
inline constexpr uint32_t kTextOperandShapes = 1u << 2;
// Operand names were written with `%`.
inline constexpr uint32_t kTextPercentOperands = 1u << 3;
// Computation references (`to_apply=%add`) were written with `%`.
inline constexpr uint32_t kTextPercentCalls = 1u << 4;
// `control-predecessors={%a}` names were written with `%`.
inline constexpr uint32_t kTextPercentControl = 1u << 5;
// An async op written in XLA's sugared form (`custom-call-start`): the
// wrapped opcode's byte is kept in bits 8..15.
inline constexpr uint32_t kTextAsyncSugar = 1u << 6;
inline constexpr int kTextSugarOpcodeShift = 8;
// The operand list had XLA's `/*index=5*/` comments (dumps printed without
// operand shapes have none).
inline constexpr uint32_t kTextOperandIndexComments = 1u << 16;
// Computation only: the closing brace was followed by `// <name>` (newer
// XLA dumps print that).
inline constexpr uint32_t kTextClosingNameComment = 1u << 17;
// Module only: the header was written `HloModule name:` (old dumps).
inline constexpr uint32_t kTextHeaderColon = 1u << 7;

// An instruction keeps its flags in HloInstruction::kTextFlagBits bits.
static_assert(kTextClosingNameComment < (1u << HloInstruction::kTextFlagBits) &&
                  (0xffu << kTextSugarOpcodeShift) < (1u << HloInstruction::kTextFlagBits),
              "a text flag does not fit in HloInstruction::text_flags()");

}  // namespace hilo

#endif  // HILO_TEXT_TEXT_FLAGS_H_
