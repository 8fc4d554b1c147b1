// InstructionNameIndex: a module's instructions found by their names, an
// open-addressing table (linear probing over 8-byte slots, at most 7/8
// full; linear_probing.h) whose slot for a name can be prefetched from the
// name's hash alone (Prefetch), so that a loop over many names (the
// verifier's check of every instruction's name) hashes a name some
// instructions ahead and finds its slot in cache when it gets there.
// absl's flat_hash_set, which this replaces, has a prefetch() that GCC 12
// compiles to nothing under -DNDEBUG with Debian's absl 20220623
// (docs/performance.md, "(rt-lean)"). Prefetch goes through PrefetchLine
// (prefetch.h), which GCC 12 keeps. The parser fetches a name's slot when
// it reads the name and inserts it once the instruction is parsed.
//
// A slot is an HloInstruction* in its low 48 bits and 16 bits of the
// name's hash above them (0: empty), so that a probe compares the name
// only when those 16 bits match: most probes of another name touch neither
// the instruction nor its name. User-space addresses on Linux x86-64 and
// AArch64 are below 2^48 (2^47 on x86-64 unless a mapping asks for more);
// Insert checks it and says so rather than storing a pointer it could not
// give back. Erasing and growing are linear_probing.h's.
//
// The names are where the instructions keep them: a name must not change
// while its instruction is in the table.
#ifndef HILO_IR_INSTRUCTION_NAME_INDEX_H_
#define HILO_IR_INSTRUCTION_NAME_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/linear_probing.h"
#include "hilo/ir/name_hash.h"
#include "hilo/ir/prefetch.h"

namespace hilo {

class InstructionNameIndex : public linear_probing::Table<uint64_t> {
 public:
  // Room for `n` entries without growing; with `max_slots`, half full
  // where that many slots allow (linear_probing::CapacityFor).
  void reserve(size_t n, size_t max_slots = 0) {
    Reserve(n, [this](uint64_t slot) { return HomeOf(slot); }, max_slots);
  }

  // Brings the home slot of a name with hash `hash` (HashName) into cache.
  void Prefetch(size_t hash) const {
    if (capacity_ != 0) PrefetchLine(&slots_[Home(hash)]);
  }

  // The instruction named `name`, or nullptr. `hash` is HashName(name).
  HloInstruction* Find(absl::string_view name, size_t hash) const {
    return capacity_ == 0 ? nullptr : Instruction(slots_[Probe(name, hash)]);
  }
  HloInstruction* Find(absl::string_view name) const { return Find(name, HashName(name)); }
  bool contains(absl::string_view name) const { return Find(name) != nullptr; }

  // Adds `inst` under its name unless the name is there: then returns the
  // instruction that has it, else nullptr.
  HloInstruction* Insert(HloInstruction* inst) { return Insert(inst, HashName(inst->name())); }
  // The same, `hash` being HashName(inst->name()).
  HloInstruction* Insert(HloInstruction* inst, size_t hash) {
    const absl::string_view name = inst->name();
    if (!HasRoomForOneMore()) Grow(GrownCapacity());
    const size_t i = Probe(name, hash);
    if (slots_[i] != 0) return Instruction(slots_[i]);
    slots_[i] = Tag(hash) | Address(inst);
    ++size_;
    return nullptr;
  }

  // Removes the entry for `name`, if any; returns its instruction.
  HloInstruction* Erase(absl::string_view name) {
    if (capacity_ == 0) return nullptr;
    const size_t i = Probe(name, HashName(name));
    if (slots_[i] == 0) return nullptr;
    HloInstruction* erased = Instruction(slots_[i]);
    EraseAt(i, [this](uint64_t slot) { return HomeOf(slot); });
    return erased;
  }

 private:
  static constexpr uint64_t kAddressMask = (uint64_t{1} << 48) - 1;
  static constexpr uint64_t kTagMask = ~kAddressMask;
  // The slot holding `name` (hash `hash`), else the empty slot that ends
  // its run: where Find, Insert and Erase each look. capacity_ > 0.
  size_t Probe(absl::string_view name, size_t hash) const {
    const uint64_t tag = Tag(hash);
    for (size_t i = Home(hash);; i = Next(i)) {
      const uint64_t slot = slots_[i];
      if (slot == 0 || ((slot & kTagMask) == tag && Instruction(slot)->name() == name)) return i;
    }
  }
  // Positions from the hash's high bits (Home), tags from its low ones.
  size_t HomeOf(uint64_t slot) const { return Home(HashName(Instruction(slot)->name())); }
  static uint64_t Tag(size_t hash) { return static_cast<uint64_t>(hash) << 48; }
  static HloInstruction* Instruction(uint64_t slot) {
    return reinterpret_cast<HloInstruction*>(static_cast<uintptr_t>(slot & kAddressMask));
  }
  static uint64_t Address(const HloInstruction* inst) {
    const uint64_t address = reinterpret_cast<uintptr_t>(inst);
    if ((address & kTagMask) != 0) AddressTooHigh();
    return address;
  }
  [[noreturn]] static void AddressTooHigh();
  void Grow(size_t capacity) {
    Rehash(capacity, [this](uint64_t slot) { return HomeOf(slot); });
  }
};

// The parser's and the proto reader's set of the instructions they add,
// which becomes the module's name index (HloModule::EndBulkLoad).
using InstructionNameSet = InstructionNameIndex;

}  // namespace hilo

#endif  // HILO_IR_INSTRUCTION_NAME_INDEX_H_
