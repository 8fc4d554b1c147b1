#include "hilo/ir/hlo_opcode.h"

#include "hilo/ir/name_table.h"

namespace hilo {
namespace {

struct OpcodeInfo {
  absl::string_view name;
  int arity;
};

constexpr OpcodeInfo kOpcodeInfo[] = {
#define HILO_OPCODE_INFO(enumerator, value, text, arity) {text, arity},
    HILO_OPCODE_LIST(HILO_OPCODE_INFO)
#undef HILO_OPCODE_INFO
};
static_assert(sizeof(kOpcodeInfo) / sizeof(kOpcodeInfo[0]) == kHloOpcodeCount);

}  // namespace

absl::string_view HloOpcodeString(HloOpcode opcode) {
  return kOpcodeInfo[static_cast<int>(opcode)].name;
}

int HloOpcodeArity(HloOpcode opcode) { return kOpcodeInfo[static_cast<int>(opcode)].arity; }

std::optional<HloOpcode> StringToHloOpcode(absl::string_view name) {
  static const auto* const kByName = [] {
    auto* table = new NameTable<HloOpcode>();
    for (int i = 0; i < kHloOpcodeCount; ++i) table->Add(kOpcodeInfo[i].name, static_cast<HloOpcode>(i));
    return table;
  }();
  return kByName->Find(name);
}

}  // namespace hilo
