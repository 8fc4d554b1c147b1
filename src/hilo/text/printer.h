// PrintHloModule: HloModule -> XLA's HLO text format.
//
// Deterministic, in XLA's layout (two-space indent, `ROOT`, `%name = shape
// opcode(operands), attributes`). Everything the parser kept is printed
// back, so print(parse(print(parse(x)))) == print(parse(x)) byte for byte.
#ifndef HILO_TEXT_PRINTER_H_
#define HILO_TEXT_PRINTER_H_

#include <string>

#include "hilo/ir/hlo_module.h"

namespace hilo {

std::string PrintHloModule(const HloModule& module);
void AppendHloModule(const HloModule& module, std::string* out);
// One instruction as a single line, without indent or `ROOT`.
std::string PrintHloInstruction(const HloInstruction& instruction);
// A computation's signature as XLA prints it: `(p0: f32[2], p1: s32[]) -> f32[2]`
// (parameters in number order, shapes without layouts).
std::string ComputationSignature(const HloComputation& computation);

}  // namespace hilo

#endif  // HILO_TEXT_PRINTER_H_
