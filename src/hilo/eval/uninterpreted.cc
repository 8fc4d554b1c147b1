#include "hilo/eval/uninterpreted.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/eval/interpreter.h"

namespace hilo {
namespace eval {
namespace {

// A 64-bit hash that is the same in every process (absl::Hash is seeded
// per process), so a run is reproducible.
class Hasher {
 public:
  void Add(uint64_t x) {
    state_ ^= x + 0x9E3779B97F4A7C15ull + (state_ << 6) + (state_ >> 2);
    SplitMix64(&state_);
  }
  void Add(absl::string_view text) {
    Add(static_cast<uint64_t>(text.size()));
    uint64_t word = 0;
    for (size_t k = 0; k < text.size(); ++k) {
      word = (word << 8) | static_cast<unsigned char>(text[k]);
      if (k % 8 == 7) Add(word), word = 0;
    }
    Add(word);
  }
  void Add(const Array& a) {
    Add(static_cast<uint64_t>(a.type()));
    for (int64_t d : a.dims()) Add(static_cast<uint64_t>(d));
    if (a.is_float()) {
      for (const std::vector<double>* part : {&a.f(), &a.im()}) {  // im() is empty unless complex
        for (double x : *part) {
          uint64_t bits;
          std::memcpy(&bits, &x, sizeof(bits));
          Add(bits);
        }
      }
    } else {
      for (int64_t x : a.i()) Add(static_cast<uint64_t>(x));
    }
  }
  void Add(const Value& v) {
    std::vector<const Array*> leaves;
    v.CollectLeaves(&leaves);
    Add(static_cast<uint64_t>(leaves.size()));
    for (const Array* a : leaves) Add(*a);
  }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = 0x243F6A8885A308D3ull;
};

bool IsRng(HloOpcode op) {
  return op == HloOpcode::kRng || op == HloOpcode::kRngBitGenerator ||
         op == HloOpcode::kRngGetAndUpdateState;
}

}  // namespace

bool IsIdentityCustomCall(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kCustomCall || instr.operand_count() != 1) return false;
  const std::string& t = instr.custom_call_target();
  return t == "Sharding" || t == "xla.sdy.FuncResultSharding" || t == "annotate_device_placement" ||
         t == "MoveToDevice" || t == "MoveToHost";
}

bool IsUninterpreted(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kCustomCall:
      return instr.custom_call_target() != kCollectiveMatmulTarget && !IsIdentityCustomCall(instr) &&
             instr.custom_call_target() != "TopK";  // evaluated (ops_internal.h TopK)
    case HloOpcode::kConstant:
      return instr.literal_text().find("...") != std::string::npos;
    default:
      return IsRng(instr.opcode());
  }
}

std::string UninterpretedKind(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kCustomCall:
      return absl::StrCat("custom-call ", instr.custom_call_target());
    case HloOpcode::kConstant:
      return "elided constant";
    default:
      return std::string(HloOpcodeString(instr.opcode()));
  }
}

absl::StatusOr<Value> UninterpretedValue(const HloInstruction& instr,
                                         absl::Span<const Value* const> operands) {
  Hasher h;
  h.Add(HloOpcodeString(instr.opcode()));
  h.Add(instr.shape().ToString(false));
  if (instr.opcode() == HloOpcode::kCustomCall) {
    h.Add(instr.custom_call_target());
    h.Add(instr.backend_config().value_or(""));
  } else {
    // Constants and rng: the name is their identity.
    h.Add(instr.name());
  }
  // Everything else written on the instruction (opaque, api_version,
  // distribution, algorithm...).
  for (const RawAttribute& a : instr.raw_attributes()) {
    h.Add(a.name);
    h.Add(a.value);
  }
  if (instr.opcode() != HloOpcode::kConstant) {
    for (const Value* v : operands) h.Add(*v);
  }
  auto leaves = ZeroLeaves(instr.shape());
  if (!leaves.ok()) return leaves.status();
  for (size_t k = 0; k < leaves->size(); ++k) {
    FillPseudoRandom(h.value() ^ (static_cast<uint64_t>(k) + 1) * 0x165667B19E3779F9ull,
                     &(*leaves)[k]);
  }
  return ValueFromLeaves(instr.shape(), *std::move(leaves));
}

}  // namespace eval
}  // namespace hilo
