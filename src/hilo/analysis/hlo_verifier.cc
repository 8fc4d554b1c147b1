// VerifyHloModule: see hlo_verifier.h and docs/verifier.md.
//
// Three phases, each linear in the size of the module and free of recursion
// on graph depth: (1) structure of every computation (parents, operand/user
// agreement, names, parameters, root, called computations, arity), (2) no
// cycle through operands or control edges (an iterative three-colour DFS),
// (3) per-opcode shape checks. Later phases rely on what earlier ones
// established (operands are in the same computation, called computations
// belong to the module), so the first problem reported is the most basic.
//
// On large modules the time goes to cache misses on instructions, so phase 1
// walks each computation once and also runs every phase-3 check that is
// safe by then, keeping the first error of each kind so that the report is
// the one the phases in order would give. Phase 2 searches for a cycle only
// where unique ids do not already rule one out.
#include "hilo/analysis/hlo_verifier.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_opcode.h"
#include "hilo/ir/name_hash.h"
#include "hilo/ir/prefetch.h"
#include "hilo/ir/shape.h"

namespace hilo {
namespace {

// An operand or user list as a span, taken once before a loop: the compact
// list (ir/pointer_list.h) derives its size and address from its two words
// on every call, which the verifier's per-operand loops paid several times
// per step (docs/performance.md, thirteenth session: merged).
template <typename List>  // HloInstruction::InstructionList or UserList
absl::Span<HloInstruction* const> AsSpan(const List& list) {
  return list.span();
}

std::string Name(const HloComputation* comp) {
  return comp == nullptr ? std::string("<null>") : absl::StrCat("%", comp->name());
}

constexpr absl::string_view kLocationPayload = "hilo/verifier-location";

absl::Status WithLocation(absl::Status status, const HloComputation* comp, const HloInstruction* inst) {
  if (comp != nullptr) {
    status.SetPayload(kLocationPayload,
                      absl::Cord(absl::StrCat(comp->name(), "\n", inst == nullptr ? "" : inst->name())));
  }
  return status;
}

template <typename... Args>
absl::Status Fail(const HloComputation* comp, const HloInstruction* inst, const Args&... args) {
  return WithLocation(absl::FailedPreconditionError(absl::StrCat("in computation ", Name(comp),
                                                                 ", instruction %", inst->name(),
                                                                 ": ", args...)),
                      comp, inst);
}

template <typename... Args>
absl::Status FailComputation(const HloComputation* comp, const Args&... args) {
  return WithLocation(
      absl::FailedPreconditionError(absl::StrCat("in computation ", Name(comp), ": ", args...)),
      comp, nullptr);
}

// Dimension i of a and dimension j of b agree unless one of them is dynamic
// (bounded or unbounded): only what is certain is checked.
bool DimsAgree(const Shape& a, int64_t i, const Shape& b, int64_t j) {
  if (a.is_dynamic_dimension(i) || b.is_dynamic_dimension(j)) return true;
  return a.dimensions(i) == b.dimensions(j);
}

// Element types that may stand for each other: equal, or (mixed precision)
// both floating point.
bool SameElementType(PrimitiveType a, PrimitiveType b, bool mixed_precision) {
  return a == b || (mixed_precision && IsFloatingPointType(a) && IsFloatingPointType(b));
}

enum class TypeCheck { kNone, kExact, kIgnoreFpPrecision };

// Structural equality ignoring layouts and tolerating dynamic dimensions.
// Recursion follows tuple nesting, which the parser bounds (kMaxNestingDepth).
bool ShapesAgree(const Shape& a, const Shape& b, TypeCheck types) {
  if (a.IsTuple() || b.IsTuple()) {
    if (!a.IsTuple() || !b.IsTuple() || a.tuple_shapes_size() != b.tuple_shapes_size()) {
      return false;
    }
    for (int64_t i = 0; i < a.tuple_shapes_size(); ++i) {
      if (!ShapesAgree(a.tuple_shapes(i), b.tuple_shapes(i), types)) return false;
    }
    return true;
  }
  if (a.IsArray() != b.IsArray()) return false;
  if (!a.IsArray()) return a.element_type() == b.element_type();
  if (types != TypeCheck::kNone &&
      !SameElementType(a.element_type(), b.element_type(),
                       types == TypeCheck::kIgnoreFpPrecision)) {
    return false;
  }
  if (a.rank() != b.rank()) return false;
  for (int64_t i = 0; i < a.rank(); ++i) {
    if (!DimsAgree(a, i, b, i)) return false;
  }
  return true;
}

std::string S(const Shape& shape) { return shape.ToString(/*print_layout=*/false); }

bool IsScalarPred(const Shape& shape) {
  return shape.IsArray() && shape.element_type() == PrimitiveType::PRED && shape.rank() == 0;
}

bool IsScalarOf(const Shape& shape, PrimitiveType type) {
  return shape.IsArray() && shape.element_type() == type && shape.rank() == 0;
}

// Users with at most this many operands (and instructions with at most this
// many users) are checked by a direct search rather than through hash sets.
constexpr int64_t kDirectSearchOperands = 16;

// How many instructions ahead the linear walks prefetch: they are bound by
// cache misses on instructions scattered over the heap.
constexpr size_t kAhead = 16;
// The ring of name hashes computed ahead (more than kAhead / 4 + 1).
constexpr size_t kHashRing = 8;
static_assert(kHashRing > kAhead / 4 && (kHashRing & (kHashRing - 1)) == 0);

// What a replica group list says on its own, whatever the collective's
// channel mode: unknown (raw form), every participant (`{}`), or groups of
// `size` ids.
struct GroupsShape {
  enum class Kind { kRaw, kAll, kSized };
  Kind kind = Kind::kAll;
  int64_t size = 0;
};

// Validates a replica group list (iota numbers consistent; explicit groups
// non-empty, ids non-negative and each in one group, sizes uniform if
// required). `seen` is scratch, all false on entry and on return.
absl::StatusOr<GroupsShape> CheckReplicaGroups(const ReplicaGroups& groups,
                                               bool uniform_required, std::vector<bool>* seen) {
  switch (groups.form()) {
    case ReplicaGroups::Form::kRaw:
      return GroupsShape{GroupsShape::Kind::kRaw};
    case ReplicaGroups::Form::kIota: {
      const IotaReplicaGroupList& iota = groups.iota();
      int64_t total = 1;
      bool ok = iota.num_groups > 0 && iota.group_size > 0;
      for (int64_t d : iota.reshape_dims) {
        if (d < 0 || __builtin_mul_overflow(total, d, &total)) ok = false;
      }
      int64_t product = 0;
      if (ok && (__builtin_mul_overflow(iota.num_groups, iota.group_size, &product) ||
                 product != total)) {
        ok = false;
      }
      if (ok && !iota.transpose_perm.empty()) {
        const size_t rank = iota.reshape_dims.size();
        std::vector<bool> perm_seen(rank, false);
        if (iota.transpose_perm.size() != rank) ok = false;
        for (int64_t p : iota.transpose_perm) {
          if (!ok) break;
          if (p < 0 || static_cast<size_t>(p) >= rank || perm_seen[p]) ok = false;
          else perm_seen[p] = true;
        }
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica_groups=", groups.ToString(), " is not a valid iota replica group list"));
      }
      return GroupsShape{GroupsShape::Kind::kSized, iota.group_size};
    }
    case ReplicaGroups::Form::kExplicit:
      break;
  }
  if (groups.empty()) return GroupsShape{GroupsShape::Kind::kAll};
  const auto& list = groups.explicit_groups();
  // Device ids are small in practice: a bitmap is much cheaper than a hash
  // set on modules with 100,000 collectives; huge ids use the set.
  int64_t max_id = -1;
  for (const auto& group : list) {
    for (int64_t id : group) max_id = std::max(max_id, id);
  }
  const int64_t small = max_id >= 0 && max_id < (int64_t{1} << 20) ? max_id + 1 : 0;
  if (static_cast<int64_t>(seen->size()) < small) seen->resize(small, false);
  absl::flat_hash_set<int64_t> seen_large;
  auto first_time = [&](int64_t id) {
    if (id < small) {
      if ((*seen)[id]) return false;
      (*seen)[id] = true;
      return true;
    }
    return seen_large.insert(id).second;
  };
  absl::Status status;
  for (size_t g = 0; g < list.size() && status.ok(); ++g) {
    if (list[g].empty()) {
      status = absl::InvalidArgumentError(absl::StrCat("replica group ", g, " is empty"));
    } else if (uniform_required && list[g].size() != list[0].size()) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "replica groups must all have the same size: group 0 has ", list[0].size(),
          " ids but group ", g, " has ", list[g].size()));
    }
    for (size_t k = 0; k < list[g].size() && status.ok(); ++k) {
      const int64_t id = list[g][k];
      if (id < 0) {
        status = absl::InvalidArgumentError(absl::StrCat("replica id ", id, " is negative"));
      } else if (!first_time(id)) {
        status = absl::InvalidArgumentError(
            absl::StrCat("replica id ", id, " appears in more than one replica group"));
      }
    }
  }
  std::fill(seen->begin(), seen->begin() + small, false);
  if (!status.ok()) return status;
  return GroupsShape{GroupsShape::Kind::kSized, static_cast<int64_t>(list[0].size())};
}

// HILO_VERIFY_NAME_INDEX=0: the verifier always checks names with a set of
// its own (the switch of Verifier::names_by_module_index_).
bool NamesByModuleIndex() {
  static const bool by_index = !EnvSwitchIsZero("HILO_VERIFY_NAME_INDEX");
  return by_index;
}

// HILO_VERIFY_NAME_PREFETCH=0: the walk does not hash names ahead to
// prefetch their slots in the module's name index (docs/performance.md,
// "(name-index)", measures the gain).
bool PrefetchModuleNames() {
  static const bool prefetch = !EnvSwitchIsZero("HILO_VERIFY_NAME_PREFETCH");
  return prefetch;
}

// The switches of VerifyHloInstructions' fast paths (Verifier::RunTouched;
// docs/performance.md, "(touched-fast)", measures them).
// HILO_VERIFY_TOUCHED_FAST=0: every touched instruction's structure goes
// through the checks that build an error status (TouchedStructureOk, the
// fast path they then skip, is not asked), and the touched list is walked
// once more first to size its bits. HILO_VERIFY_SHAPE_REPEAT=0: a reshape
// is not compared with the last reshape that passed, and a custom call
// goes through the memo and CheckShape like any instruction.
struct TouchedSwitches {
  bool fast_path = !EnvSwitchIsZero("HILO_VERIFY_TOUCHED_FAST");
  bool shape_repeat = !EnvSwitchIsZero("HILO_VERIFY_SHAPE_REPEAT");
};
const TouchedSwitches& Touched() {
  static const TouchedSwitches switches;
  return switches;
}

// HILO_VERIFY_DEFER_CALLS=1: every while, conditional and call waits for
// phase 3 (Verifier::EarlyShapeCheck).
bool DeferEveryCall() {
  static const bool defer = EnvSwitchIsOne("HILO_VERIFY_DEFER_CALLS");
  return defer;
}

// Instruction names seen so far in the module, as their 64-bit hashes in an
// open-addressing table: a probe reads one cache line of a dense table
// instead of a slot and then the string it points to. A hash seen before
// only means "maybe": the caller confirms against the real names.
class NameHashSet {
 public:
  NameHashSet() { Rehash(16); }
  void Reserve(size_t n) {
    size_t capacity = 16;
    while (capacity * 3 < n * 4) capacity *= 2;  // load factor <= 3/4
    if (capacity > slots_.size()) Rehash(capacity);
  }
  void Prefetch(uint64_t hash) const { PrefetchLine(&slots_[Home(hash | (hash == 0))]); }
  // Inserts `hash`; true if it was already there.
  bool Insert(uint64_t hash) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Rehash(slots_.size() * 2);
    hash |= hash == 0;  // 0 marks an empty slot
    const size_t mask = slots_.size() - 1;
    for (size_t i = Home(hash);; i = (i + 1) & mask) {
      if (slots_[i] == hash) return true;
      if (slots_[i] == 0) {
        slots_[i] = hash;
        ++size_;
        return false;
      }
    }
  }

 private:
  size_t Home(uint64_t hash) const {
    return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void Rehash(size_t capacity) {  // capacity: a power of two
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(capacity, 0);
    shift_ = 64 - __builtin_ctzll(capacity);
    for (uint64_t hash : old) {
      if (hash == 0) continue;
      size_t i = Home(hash);
      while (slots_[i] != 0) i = (i + 1) & (capacity - 1);
      slots_[i] = hash;
    }
  }

  std::vector<uint64_t> slots_;
  size_t size_ = 0;
  int shift_ = 0;
};

// The shape checks that passed, remembered by everything they read (the
// opcode, the result's and the operands' Shape objects, the attributes the
// check reads), so that alike instructions are checked once: a layer of a
// generated model repeats the same all-gathers, dots and reshapes on the
// same shapes, which the parser gives one shared Shape object each. Valid
// for one verifier run: nothing changes the module meanwhile, and an entry
// holds its replica groups alive, so no address is reused. 64 slots in 16
// sets of 4, the newest first: a module of all-different instructions only
// misses. Not direct-mapped: a generated layer has 12 keys, and which of
// them share one of 64 slots depends on where the shapes happen to lie (a
// collision 64% of the time), so one build checked thousands of shapes more
// than another of the same source (twentieth session, docs/performance.md).
// HILO_VERIFY_SHAPE_MEMO=0: every instruction checked.
class ShapeMemo {
 public:
  // Whether `inst`'s check passed for an alike instruction before. Sets up
  // the key that Remember() stores.
  bool Seen(const HloInstruction& inst) {
    static const bool on = !EnvSwitchIsZero("HILO_VERIFY_SHAPE_MEMO");
    remember_ = on && KeyOf(inst, &key_);
    if (!remember_) return false;
    set_ = &slots_[Hash(key_) % kSets * kWays];
    for (size_t way = 0; way < kWays; ++way) {
      const Slot& slot = set_[way];
      if (!slot.used) return false;
      if (slot.key == key_ &&
          (!key_.has_groups() || slot.groups.SharesContentsWith(*inst.replica_groups()))) {
        return true;
      }
    }
    return false;
  }
  // Records that the check of the instruction last given to Seen() passed
  // (it was not seen): first in its set, the set's oldest dropped.
  void Remember(const HloInstruction& inst) {
    if (!remember_) return;
    std::rotate(set_, set_ + kWays - 1, set_ + kWays);
    set_->used = true;
    set_->key = key_;
    set_->groups = key_.has_groups() ? *inst.replica_groups() : ReplicaGroups();
  }
  // Whether the memo is on (HILO_VERIFY_SHAPE_MEMO), for RunTouched's own
  // comparison with the last reshape. (Seen reads the switch itself: with
  // this call instead GCC inlines Seen into VerifyShape, which costs the
  // whole-module check 2.9 M instructions on L17000.hlo.)
  static bool On() {
    static const bool on = !EnvSwitchIsZero("HILO_VERIFY_SHAPE_MEMO");
    return on;
  }

 private:
  // Packed in words, compared word by word: a key of bytes and flags
  // compared field by field (with a memcmp call for the attribute bytes)
  // made a lookup cost 223 instructions on the generated module (twenty-
  // first session, docs/performance.md).
  struct Key {
    static constexpr size_t kAttrCapacity = 16;
    static constexpr uint64_t kHasChannel = 1 << 16, kGlobalIds = 1 << 17, kHasGroups = 1 << 18;
    // The opcode (bits 0-7), the operand count (8-15), the flags above.
    uint64_t head = 0;
    std::array<uint64_t, kAttrCapacity / 8> attrs{};  // small attribute integers, a byte each
    int64_t index = 0;
    std::array<const Shape*, 3> shapes{};  // the result's, the operands'
    size_t attr_size = 0;                  // bytes of attrs used (not compared: the lists say)
    bool has_groups() const { return (head & kHasGroups) != 0; }
    bool operator==(const Key& o) const {
      return head == o.head && attrs[0] == o.attrs[0] && attrs[1] == o.attrs[1] &&
             index == o.index && shapes[0] == o.shapes[0] && shapes[1] == o.shapes[1] &&
             shapes[2] == o.shapes[2];
    }
    // Appends one small integer; false if it does not fit.
    bool Add(int64_t v) {
      if (attr_size >= kAttrCapacity || v < 0 || v > 255) return false;
      attrs[attr_size / 8] |= static_cast<uint64_t>(v) << (8 * (attr_size % 8));
      ++attr_size;
      return true;
    }
  };
  struct Slot {
    bool used = false;
    Key key;
    ReplicaGroups groups;  // a collective's: compared by identity, held alive
  };

  // Appends a list of small integers, its length first; false if it does not fit.
  static bool AddList(const std::vector<int64_t>& list, Key* key) {
    if (key->attr_size + 1 + list.size() > Key::kAttrCapacity) return false;
    key->Add(static_cast<int64_t>(list.size()));
    for (int64_t v : list) {
      if (!key->Add(v)) return false;
    }
    return true;
  }
  // Whether there are dimensions (`{}` differs from none), then the list.
  static bool AddDimensions(const HloInstruction& inst, Key* key) {
    const std::optional<std::vector<int64_t>>& dims = inst.dimensions();
    return key->Add(dims.has_value() ? 1 : 0) && (!dims.has_value() || AddList(*dims, key));
  }

  // The key of `inst`'s check, or false when its check is not remembered
  // (an opcode whose check reads more than this key holds, or attributes
  // that do not fit). The opcode is asked first: most instructions of a
  // module are not remembered, and they pay only this.
  static bool KeyOf(const HloInstruction& inst, Key* key) {
    const HloOpcode opcode = inst.opcode();
    switch (opcode) {
      case HloOpcode::kReshape:
      case HloOpcode::kConvert:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kTranspose:
      case HloOpcode::kBroadcast:
      case HloOpcode::kDot:
      case HloOpcode::kAllGather:
      case HloOpcode::kReduceScatter:
        break;
      default:
        return false;
    }
    const absl::Span<HloInstruction* const> operands = AsSpan(inst.operands());
    if (operands.size() > 2) return false;
    *key = Key();
    key->head = static_cast<uint64_t>(opcode) | static_cast<uint64_t>(operands.size()) << 8;
    key->shapes[0] = &inst.shape();
    for (size_t i = 0; i < operands.size(); ++i) key->shapes[i + 1] = &operands[i]->shape();
    switch (opcode) {
      case HloOpcode::kGetTupleElement:
        key->index = inst.tuple_index();
        return true;
      case HloOpcode::kTranspose:
      case HloOpcode::kBroadcast:
        return AddDimensions(inst, key);
      case HloOpcode::kDot: {
        const DotDimensionNumbers& dn = inst.dot_dimension_numbers();
        return AddList(dn.lhs_batch_dimensions, key) && AddList(dn.rhs_batch_dimensions, key) &&
               AddList(dn.lhs_contracting_dimensions, key) &&
               AddList(dn.rhs_contracting_dimensions, key);
      }
      case HloOpcode::kAllGather:
      case HloOpcode::kReduceScatter:
        // GroupSize reads whether there is a channel id (not its value),
        // use_global_device_ids and the groups; the module's replica and
        // partition counts do not change.
        if (inst.channel_id().has_value()) key->head |= Key::kHasChannel;
        if (inst.use_global_device_ids().value_or(false)) key->head |= Key::kGlobalIds;
        if (inst.replica_groups().has_value()) key->head |= Key::kHasGroups;
        return AddDimensions(inst, key);
      default:  // reshape, convert
        return true;
    }
  }
  static size_t Hash(const Key& key) {
    uint64_t h = (key.head & 0xff) * 0x9E3779B97F4A7C15ULL;
    for (const Shape* s : key.shapes) {
      h = (h ^ (reinterpret_cast<uintptr_t>(s) >> 4)) * 0xC2B2AE3D27D4EB4FULL;
    }
    return static_cast<size_t>(h >> 40);
  }

  static constexpr size_t kSets = 16, kWays = 4;
  std::array<Slot, kSets * kWays> slots_;
  Key key_;  // of the instruction last given to Seen()
  bool remember_ = false;
  Slot* set_ = nullptr;  // the first of the set key_ falls in
};

class Verifier {
 public:
  Verifier(const HloModule& module, const HloVerifierOptions& options)
      : module_(module), options_(options) {}
  // computation_index_ refers to computations_ by address.
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  absl::Status Run() {
    if (module_.entry_computation() == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("module ", module_.name(), " has no entry computation"));
    }
    computations_ = ComputationSlots(module_.computation_slots());
    IndexComputations();
    if (!computation_index_.contains(module_.entry_computation())) {
      return absl::FailedPreconditionError(
          absl::StrCat("module ", module_.name(), ": the entry computation ",
                       Name(module_.entry_computation()), " is not one of its computations"));
    }
    const int64_t instruction_count = module_.instruction_count();
    instruction_count_ = static_cast<size_t>(instruction_count);
    if (!names_by_module_index_) names_.Reserve(instruction_count_);
    // The module finds a computation by its name, at most one for each, so
    // a name used twice leaves a computation not found as itself: no set
    // of names (2.2 MB for 100,000 computations; docs/performance.md,
    // "fourteenth session").
    for (size_t c = 0; c < computations_.size(); ++c) {
      const HloComputation* comp = computations_[c];
      if (module_.GetComputationWithName(comp->name()) != comp) {
        return FailComputation(comp, "computation name is used twice in the module");
      }
    }
    acyclic_.assign(computations_.size(), false);
    for (size_t c = 0; c < computations_.size(); ++c) {
      if (absl::Status s = VerifyStructure(c); !s.ok()) return s;
    }
    // The tables of the walk are not needed after it: freed now, so that
    // the rest of the verification (and the printer, on the other thread)
    // reuses their memory instead of adding to the peak.
    Release(names_);
    Release(edges_);
    Release(user_sets_);
    if (absl::Status s = VerifyCallGraphAcyclic(); !s.ok()) return s;
    Release(computation_index_);
    for (size_t c = 0; c < computations_.size(); ++c) {
      if (absl::Status s = VerifyAcyclic(c); !s.ok()) return s;
    }
    // Phase 3: the shape checks the walk of phase 1 deferred, all of them on
    // instructions before the first early check that failed.
    for (const auto& [comp, inst] : deferred_shapes_) {
      if (absl::Status s = VerifyShape(comp, inst); !s.ok()) return s;
    }
    return shape_error_;
  }

  // Frees a table's memory (clear() keeps it).
  template <typename T>
  static void Release(T& table) {
    table = T();
  }

  // computation_index_ for computations_.
  void IndexComputations() {
    computation_index_ = ComputationIndex(0, PositionHash{&computations_}, PositionEq{&computations_});
    computation_index_.reserve(computations_.size());
    for (size_t c = 0; c < computations_.size(); ++c) {
      computation_index_.insert(static_cast<uint32_t>(c));
    }
  }
  // computations_[c] is in the module: its position c.
  std::optional<size_t> PositionOf(const HloComputation* comp) const {
    auto it = computation_index_.find(comp);
    if (it == computation_index_.end()) return std::nullopt;
    return *it;
  }

  // VerifyHloInstructions (hlo_verifier.h): the checks of phases 1-3 that
  // concern `touched`, then a cycle search in their computations. Anything
  // that needs the whole module (a parameter's numbering, a called
  // computation's call graph) falls back to Run().
  absl::Status RunTouched(absl::Span<const HloInstruction* const> touched, bool search_cycles) {
    if (module_.entry_computation() == nullptr) return Run();
    computations_ = ComputationSlots(module_.computation_slots());
    IndexComputations();
    // Seen ones by unique id (ids are dense in a module), one bit each.
    // HILO_VERIFY_TOUCHED_FAST=0 sizes the bits by a walk of its own first;
    // else they grow as ids come (one walk of the list less).
    const bool fast = Touched().fast_path;
    std::vector<uint64_t> seen;
    if (!fast) {
      int64_t max_id = -1;
      for (const HloInstruction* inst : touched) {
        if (inst != nullptr && inst->parent() != nullptr) max_id = std::max(max_id, inst->unique_id());
      }
      seen.resize(static_cast<size_t>(max_id + 64) / 64);
    }
    // An instruction without an id (of a computation outside any module)
    // is checked each time: it fails below anyway.
    auto first_time = [&seen](const HloInstruction* inst) {
      if (inst->unique_id() < 0) return true;
      const auto id = static_cast<uint64_t>(inst->unique_id());
      if (id / 64 >= seen.size()) seen.resize(std::max(id / 64 + 1, seen.size() * 2));
      uint64_t& word = seen[id / 64];
      const uint64_t bit = uint64_t{1} << (id % 64);
      if ((word & bit) != 0) return false;
      word |= bit;
      return true;
    };
    std::vector<const HloComputation*> comps;  // with a touched instruction, in first-seen order
    absl::flat_hash_set<const HloComputation*> comp_seen;
    std::vector<const HloInstruction*> live;
    for (const HloInstruction* inst : touched) {
      if (inst == nullptr || inst->parent() == nullptr || !first_time(inst)) continue;
      if (inst->opcode() == HloOpcode::kParameter ||
          !inst->called_computation_attributes().empty()) {
        return Run();
      }
      live.push_back(inst);
    }
    const HloComputation* last_checked = nullptr;  // one look-up per run of the same computation
    for (const HloInstruction* inst : live) {
      const HloComputation* comp = inst->parent();
      if (comp != last_checked &&
          (!computation_index_.contains(comp) || comp->parent() != &module_)) {
        return Fail(comp, inst, "its parent ", Name(comp), " is not a computation of this module");
      }
      last_checked = comp;
      if ((comps.empty() || comps.back() != comp) && comp_seen.insert(comp).second) {
        comps.push_back(comp);
      }
      // The module's name index has it: a name AddInstruction gives is
      // unique in the module by construction (docs/pass-framework.md says
      // what this leaves out). Found as itself first (one cheap hash: how
      // the parser's and AddInstruction's names are kept), else as a
      // reserved name.
      const absl::string_view name = inst->name();  // decoded once
      if (name.empty() ||
          (module_.IndexedInstruction(name) != inst && !module_.IsInstructionNameUsed(name))) {
        return Fail(comp, inst, "instruction name is not registered in the module, so it may be "
                    "used more than once");
      }
      // The checks below all pass: nothing more to do. Else they run, and
      // the first that fails says why.
      if (fast && TouchedStructureOk(comp, inst)) continue;
      const absl::Span<HloInstruction* const> operands = AsSpan(inst->operands());
      for (size_t i = 0; i < operands.size(); ++i) {
        const HloInstruction* operand = operands[i];
        if (absl::Status s = CheckOperand(comp, inst, i, operand); !s.ok()) return s;
        if (!ListsUser(operand, inst)) {
          return Fail(comp, inst, "it uses %", operand->name(),
                      " but is not among that instruction's users");
        }
      }
      for (const HloInstruction* succ : inst->control_successors()) {
        if (succ == nullptr || succ->parent() != comp) {
          return Fail(comp, inst, "control successor %",
                      succ == nullptr ? std::string("<null>") : succ->name(),
                      " is not in the same computation");
        }
        if (absl::c_find(succ->control_predecessors(), inst) == succ->control_predecessors().end()) {
          return Fail(comp, inst, "control successor %", succ->name(),
                      " does not list it as a control predecessor");
        }
      }
      for (const HloInstruction* pred : inst->control_predecessors()) {
        if (pred == nullptr ||
            absl::c_find(pred->control_successors(), inst) == pred->control_successors().end()) {
          return Fail(comp, inst, "control predecessor %",
                      pred == nullptr ? std::string("<null>") : pred->name(),
                      " does not list it as a control successor");
        }
      }
      if (absl::Status s = CheckArity(comp, inst); !s.ok()) return s;
      edges_.Clear();
      if (absl::Status s = CheckUsers(comp, inst); !s.ok()) return s;
      for (const DeferredEdgeCheck& check : edges_.deferred) {
        if (check.control) continue;  // checked above from this side
        if (!check.other->IsUserOf(inst)) return NotAUser(comp, inst, check.other);
      }
    }
    for (const HloComputation* comp : comps) {
      const HloInstruction* root = comp->root_instruction();
      if (root == nullptr) return FailComputation(comp, "computation has no root instruction");
      if (root->parent() != comp) {
        return FailComputation(comp, "the root instruction %", root->name(),
                               " is not in this computation");
      }
      if (!search_cycles) continue;
      if (std::optional<HloComputation::CycleEdge> edge = comp->FindCycle()) {
        return Fail(comp, edge->to, "it is on a cycle (through ",
                    edge->control ? "a control edge" : "operands", " from %", edge->from->name(),
                    ")");
      }
    }
    // A pass that adds the same custom call and reshape for each layer: a
    // custom call has nothing to check (CheckShape's default), and a
    // reshape of the same result and operand Shape objects as the last
    // reshape that passed has ShapeMemo's key of that one (its opcode,
    // operand count and Shape objects), without building the key (140
    // instructions a memo hit). HILO_VERIFY_SHAPE_REPEAT=0: each goes
    // through VerifyShape; HILO_VERIFY_SHAPE_MEMO=0 checks every reshape.
    const bool repeat = Touched().shape_repeat;
    const bool reshape_repeat = repeat && ShapeMemo::On();
    const Shape* last_result = nullptr;   // of the last reshape that passed
    const Shape* last_operand = nullptr;
    for (const HloInstruction* inst : live) {
      const HloOpcode opcode = inst->opcode();
      if (repeat && opcode == HloOpcode::kCustomCall) continue;
      const bool one_operand_reshape = opcode == HloOpcode::kReshape && inst->operand_count() == 1;
      if (reshape_repeat && one_operand_reshape && &inst->shape() == last_result &&
          &inst->operand(0)->shape() == last_operand) {
        continue;
      }
      if (absl::Status s = VerifyShape(inst->parent(), inst); !s.ok()) return s;
      if (reshape_repeat && one_operand_reshape) {
        last_result = &inst->shape();
        last_operand = &inst->operand(0)->shape();
      }
    }
    return absl::OkStatus();
  }

 private:
  // Whether RunTouched's checks of `inst`'s structure (operands, control
  // edges, arity, users) would all pass, in the common case: no control
  // edges, at most kDirectSearchOperands users. False means "maybe not":
  // the checks run and say what is wrong, if anything. No status is built,
  // no table touched (HILO_VERIFY_TOUCHED_FAST=0: always false).
  bool TouchedStructureOk(const HloComputation* comp, const HloInstruction* inst) {
    if (!inst->control_successors().empty() || !inst->control_predecessors().empty()) {
      return false;
    }
    if (!ArityOk(inst)) return false;
    const absl::Span<HloInstruction* const> operands = AsSpan(inst->operands());
    for (const HloInstruction* operand : operands) {
      if (operand == nullptr || operand->parent() != comp) return false;
      // ListsUser, its direct search here (a call of it cost 44 instructions).
      const absl::Span<HloInstruction* const> operand_users = AsSpan(operand->users());
      if (operand_users.size() > kDirectSearchOperands) {
        if (!ListsUser(operand, inst)) return false;
      } else if (!Lists(operand_users, operand_users.size(), inst)) {
        return false;
      }
    }
    // CheckUsers and the check of its deferred users: each user is not
    // null, listed once, in `comp` and has `inst` among its operands.
    const absl::Span<HloInstruction* const> users = AsSpan(inst->users());
    if (users.size() > kDirectSearchOperands) return false;
    for (size_t u = 0; u < users.size(); ++u) {
      const HloInstruction* user = users[u];
      if (user == nullptr || user->parent() != comp || Lists(users, u, user)) return false;
      const absl::Span<HloInstruction* const> user_operands = AsSpan(user->operands());
      if (!Lists(user_operands, user_operands.size(), inst)) return false;
    }
    return true;
  }

  // Whether list[0, end) holds `x`: a plain loop, where std::find's
  // unrolled one costs more on the lists of one or two of the fast path
  // (1.3 M instructions on L17000.hlo's touched instructions).
  static bool Lists(absl::Span<HloInstruction* const> list, size_t end, const HloInstruction* x) {
    for (size_t i = 0; i < end; ++i) {
      if (list[i] == x) return true;
    }
    return false;
  }

  // Whether `operand` lists `user` among its users; an operand with many
  // users (a parameter every layer reads) gets a set, built once.
  bool ListsUser(const HloInstruction* operand, const HloInstruction* user) {
    const auto& users = operand->users();
    if (users.size() <= kDirectSearchOperands) return absl::c_find(users, user) != users.end();
    auto [it, inserted] = user_sets_.try_emplace(operand);
    if (inserted) it->second.insert(users.begin(), users.end());
    return it->second.contains(user);
  }
  absl::flat_hash_map<const HloInstruction*, absl::flat_hash_set<const HloInstruction*>>
      user_sets_;

  struct DeferredEdgeCheck {
    const HloInstruction* inst;
    const HloInstruction* other;  // the user, or the control predecessor
    bool control;
  };

  // ---------------------------------------------------------------------
  // Phase 1: structure. One walk over the computation also runs the phase-3
  // shape checks that only read the instruction and its operands, so that
  // each instruction comes from memory once (the walk is bound by cache
  // misses). The errors still come out in the order of the phases and of
  // the instructions: the walk keeps the first error of each kind, and a
  // kind is reported only if every kind checked before it passed.
  absl::Status VerifyStructure(size_t c) {
    const HloComputation* comp = computations_[c];
    if (comp->parent() != &module_) {
      return FailComputation(comp, "its parent is not this module");
    }
    // The computation's own list (a null hole for a removed instruction),
    // not a copy: 8 bytes an instruction of the module at the verifier's
    // peak.
    const absl::Span<HloInstruction* const> instructions =
        comp->instruction_slots();
    if (comp->instruction_count() == 0) {
      return FailComputation(comp, "computation has no instructions");
    }
    const HloInstruction* root = comp->root_instruction();
    if (root == nullptr) return FailComputation(comp, "computation has no root instruction");
    if (root->parent() != comp) {
      return FailComputation(comp, "the root instruction %", root->name(),
                             " is not in this computation");
    }

    const size_t count = instructions.size();
    // Names are hashed kAhead / 4 instructions ahead and their slots
    // prefetched, in the module's index (InstructionNameIndex::Prefetch)
    // or the verifier's own set; HILO_VERIFY_NAME_PREFETCH=0 does not for
    // the module's index (then the hash is computed on the spot). The
    // hashes wait in a ring of kHashRing (no table of them: 8 bytes an
    // instruction would be 250 KB for llama's largest computation).
    const bool hash_ahead = !names_by_module_index_ || PrefetchModuleNames();
    uint64_t hashes[kHashRing] = {};
    for (size_t k = 0; hash_ahead && k < std::min(count, kAhead / 4); ++k) {
      if (instructions[k] != nullptr) hashes[k] = NameHash(instructions[k]);
    }
    params_.clear();
    edges_.Clear();
    absl::Status instruction_error;  // first failure of CheckInstruction
    absl::Status user_error;         // first failure of CheckUsers
    for (size_t k = 0; k < count; ++k) {
      if (k + kAhead < count && instructions[k + kAhead] != nullptr) {
        PrefetchInstruction(instructions[k + kAhead]);
      }
      if (k + kAhead / 2 < count && instructions[k + kAhead / 2] != nullptr) {
        PrefetchReferenced(instructions[k + kAhead / 2]);
      }
      if (k + kAhead / 4 < count && instructions[k + kAhead / 4] != nullptr) {
        const HloInstruction* next = instructions[k + kAhead / 4];
        if (hash_ahead) {
          const uint64_t hash = NameHash(next);
          hashes[(k + kAhead / 4) % kHashRing] = hash;
          if (names_by_module_index_) {
            module_.PrefetchIndexed(hash);
          } else {
            names_.Prefetch(hash);
          }
        }
        for (const HloInstruction* user : next->users()) {
          if (user != nullptr) PrefetchLine(&user->operands());
        }
      }
      const HloInstruction* inst = instructions[k];
      if (inst == nullptr) continue;
      if (inst->opcode() == HloOpcode::kParameter) params_.push_back(inst);
      if (!instruction_error.ok()) continue;  // parameters are still needed
      instruction_error = CheckInstruction(c, k, hash_ahead ? hashes[k % kHashRing] : 0);
      if (!instruction_error.ok() || !user_error.ok()) continue;
      user_error = CheckUsers(comp, inst);
      if (user_error.ok()) EarlyShapeCheck(c, inst);
    }

    // Parameters: numbers 0..n-1, each once.
    const std::vector<const HloInstruction*>& params = params_;
    for (const HloInstruction* p : params) {
      const int64_t n = p->parameter_number();
      if (n < 0) return Fail(comp, p, "parameter number ", n, " is negative");
    }
    std::vector<const HloInstruction*>& by_number = by_number_;
    by_number.assign(params.size(), nullptr);
    for (const HloInstruction* p : params) {
      const int64_t n = p->parameter_number();
      if (n < static_cast<int64_t>(params.size())) by_number[n] = p;
    }
    for (const HloInstruction* p : params) {
      const int64_t n = p->parameter_number();
      if (n >= static_cast<int64_t>(params.size())) {
        size_t missing = 0;
        while (by_number[missing] != nullptr) ++missing;  // exists: n took a slot
        return Fail(comp, p, "parameter number ", n, " is out of range: the computation has ",
                    params.size(), " parameter(s), numbered 0..", params.size() - 1,
                    " (number ", missing, " is missing)");
      }
    }
    by_number.assign(params.size(), nullptr);
    for (const HloInstruction* p : params) {
      const int64_t n = p->parameter_number();
      if (by_number[n] != nullptr) {
        return Fail(comp, p, "parameter number ", n, " is also used by %", by_number[n]->name());
      }
      by_number[n] = p;
    }
    for (size_t n = 0; n < by_number.size(); ++n) {
      if (comp->parameter_instruction(static_cast<int64_t>(n)) != by_number[n]) {
        return Fail(comp, by_number[n], "the computation does not list it as parameter ", n);
      }
    }

    if (!instruction_error.ok()) return instruction_error;
    // The user and predecessor checks that needed the edges of the whole
    // walk. All come before the first one that failed on the spot: the walk
    // stopped checking users there.
    for (const DeferredEdgeCheck& check : edges_.deferred) {
      if (absl::Status s = RunDeferred(comp, check); !s.ok()) return s;
    }
    if (!user_error.ok()) return user_error;

    if (edges_.user_edges != edges_.distinct_uses || edges_.pred_edges != edges_.control.size()) {
      // Some operand (control) edge has no matching user (predecessor)
      // entry; find the first one for the message, still in linear time.
      absl::flat_hash_set<std::pair<const HloInstruction*, const HloInstruction*>> listed;
      absl::flat_hash_set<std::pair<const HloInstruction*, const HloInstruction*>> listed_preds;
      for (const HloInstruction* inst : comp->instructions()) {
        for (const HloInstruction* user : inst->users()) listed.insert({inst, user});
        for (const HloInstruction* pred : inst->control_predecessors()) {
          listed_preds.insert({pred, inst});
        }
      }
      for (const HloInstruction* inst : comp->instructions()) {
        for (const HloInstruction* operand : inst->operands()) {
          if (!listed.contains(std::make_pair(operand, inst))) {
            return Fail(comp, inst, "it uses %", operand->name(),
                        " but is not among that instruction's users");
          }
        }
        for (const HloInstruction* succ : inst->control_successors()) {
          if (!listed_preds.contains(std::make_pair(inst, succ))) {
            return Fail(comp, inst, "control successor %", succ->name(),
                        " does not list it as a control predecessor");
          }
        }
      }
    }
    acyclic_[c] = edges_.ids_descend;
    if (edges_.ids_descend) comp->NoteNoUpEdges();  // a later FindCycle reads only new up-edges
    return absl::OkStatus();
  }

  // The checks of instruction slot `k` of computations_[c] on its own:
  // parent, name, operands, control successors, arity, called computations.
  absl::Status CheckInstruction(size_t c, size_t k, uint64_t name_hash) {
    const HloComputation* comp = computations_[c];
    const HloInstruction* inst = comp->instruction_slots()[k];
    if (inst->parent() != comp) {
      return Fail(comp, inst, "its parent is ", Name(inst->parent()),
                  ", not the computation that holds it");
    }
    if (NameSeenBefore(c, k, name_hash)) {
      return Fail(comp, inst, "instruction name is used more than once in the module");
    }
    const int64_t id = inst->unique_id();
    const absl::Span<HloInstruction* const> operands = AsSpan(inst->operands());
    for (size_t i = 0; i < operands.size(); ++i) {
      const HloInstruction* operand = operands[i];
      if (absl::Status s = CheckOperand(comp, inst, i, operand); !s.ok()) return s;
      edges_.ids_descend &= operand->unique_id() < id;
      // A user with few operands is searched directly; the (operand, user)
      // edges of users with many operands go in a set, so that high fan-in
      // stays linear without hashing every edge of the module.
      if (operands.size() > kDirectSearchOperands) {
        if (edges_.uses.insert({operand, inst}).second) ++edges_.distinct_uses;
      } else if (std::find(operands.begin(), operands.begin() + i, operand) ==
                 operands.begin() + i) {
        ++edges_.distinct_uses;  // first occurrence of this operand
      }
    }
    for (const HloInstruction* succ : inst->control_successors()) {
      if (succ == nullptr || succ->parent() != comp) {
        return Fail(comp, inst, "control successor %",
                    succ == nullptr ? std::string("<null>") : succ->name(),
                    " is not in the same computation");
      }
      edges_.ids_descend &= succ->unique_id() > id;
      edges_.control.insert({inst, succ});
    }
    if (absl::Status s = CheckArity(comp, inst); !s.ok()) return s;
    for (const CalledAttributeView& attr : inst->called_computation_attributes()) {
      for (const HloComputation* called : attr.computations) {
        if (called == nullptr) {
          return Fail(comp, inst, attr.name.view(), " names a computation that does not exist");
        }
        if (!computation_index_.contains(called)) {
          return Fail(comp, inst, attr.name.view(), "=", Name(called),
                      " is not a computation of this module");
        }
        if (called == comp) {
          return Fail(comp, inst, attr.name.view(), " calls its own computation ", Name(comp));
        }
      }
    }
    return absl::OkStatus();
  }

  // Operand i of `inst`, `operand`, exists and is in `comp`.
  static absl::Status CheckOperand(const HloComputation* comp, const HloInstruction* inst,
                                   size_t i, const HloInstruction* operand) {
    if (operand == nullptr) return Fail(comp, inst, "operand ", i, " is null");
    if (operand->parent() != comp) {
      return Fail(comp, inst, "operand ", i, " %", operand->name(), " is in computation ",
                  Name(operand->parent()), ", not in ", Name(comp));
    }
    return absl::OkStatus();
  }

  // What CheckArity checks.
  static bool ArityOk(const HloInstruction* inst) {
    if (inst->opcode() == HloOpcode::kAsyncUpdate) return inst->operand_count() >= 1;
    const int arity = HloOpcodeArity(inst->opcode());
    return arity == kVariadic || inst->operand_count() == arity;
  }

  static absl::Status CheckArity(const HloComputation* comp, const HloInstruction* inst) {
    const int arity = HloOpcodeArity(inst->opcode());
    if (inst->opcode() == HloOpcode::kAsyncUpdate) {
      // XLA's late-binding form `*-update(start, x, y)` passes further
      // operands to the wrapped computation; the first is the async value.
      if (inst->operand_count() < 1) {
        return Fail(comp, inst, "async-update needs the async value as its first operand");
      }
    } else if (arity != kVariadic && inst->operand_count() != arity) {
      return Fail(comp, inst, HloOpcodeString(inst->opcode()), " takes ", arity,
                  " operand(s) but has ", inst->operand_count());
    }
    return absl::OkStatus();
  }

  // Users and control predecessors of `inst` agree with the other side's
  // operands and control successors. A check that needs the edges of
  // instructions not walked yet is deferred to the end of the walk.
  absl::Status CheckUsers(const HloComputation* comp, const HloInstruction* inst) {
    const absl::Span<HloInstruction* const> users = AsSpan(inst->users());
    const bool many = users.size() > kDirectSearchOperands;
    size_t sighted = 0;  // users[0, sighted) went through user_sightings_
    absl::Cleanup forget = [&] {
      if (many) user_sightings_.Forget(users.first(sighted));
    };
    for (size_t u = 0; u < users.size(); ++u) {
      const HloInstruction* user = users[u];
      const bool repeated =
          many ? user_sightings_.Repeated(users, u, instruction_count_)
               : std::find(users.begin(), users.begin() + u, user) != users.begin() + u;
      if (many) sighted = u + 1;
      if (user == nullptr || repeated) {
        return Fail(comp, inst, "a user is null or listed twice");
      }
      // A user outside this computation (e.g. created but never added)
      // does not use it as far as this computation is concerned.
      if (user->parent() == comp && user->operand_count() > kDirectSearchOperands) {
        edges_.deferred.push_back({inst, user, /*control=*/false});
      } else if (user->parent() != comp || !user->IsUserOf(inst)) {
        return NotAUser(comp, inst, user);
      }
      ++edges_.user_edges;
    }
    for (const HloInstruction* pred : inst->control_predecessors()) {
      edges_.deferred.push_back({inst, pred, /*control=*/true});
      ++edges_.pred_edges;
    }
    return absl::OkStatus();
  }

  absl::Status RunDeferred(const HloComputation* comp, const DeferredEdgeCheck& check) {
    if (!check.control) {
      if (edges_.uses.contains(std::make_pair(check.inst, check.other))) return absl::OkStatus();
      return NotAUser(comp, check.inst, check.other);
    }
    const HloInstruction* pred = check.other;
    if (pred != nullptr && edges_.control.contains(std::make_pair(pred, check.inst))) {
      return absl::OkStatus();
    }
    return Fail(comp, check.inst, "control predecessor %",
                pred == nullptr ? std::string("<null>") : pred->name(),
                " does not list it as a control successor");
  }

  static absl::Status NotAUser(const HloComputation* comp, const HloInstruction* inst,
                               const HloInstruction* user) {
    return Fail(comp, inst, "%", user->name(),
                " is listed as a user but does not use it as an operand");
  }

  // Runs the phase-3 check of `inst` (of computations_[c]) now if it reads
  // nothing but the instruction and its operands (checked by now); a while,
  // conditional or call also reads the computations it calls, so it waits
  // for phase 3 unless all of them come before computations_[c] (their
  // structure passed; a module written callees first, as XLA prints it,
  // defers nothing: 16 bytes a call, most of a module of many small
  // computations' list; HILO_VERIFY_DEFER_CALLS=1 defers every one). Only
  // the first failure counts, and the first in walk order is the one
  // reported either way.
  void EarlyShapeCheck(size_t c, const HloInstruction* inst) {
    if (!shape_error_.ok()) return;
    const HloComputation* comp = computations_[c];
    switch (inst->opcode()) {
      case HloOpcode::kWhile:
      case HloOpcode::kConditional:
      case HloOpcode::kCall:
        if (DeferEveryCall() || !CalleesWalked(c, inst)) {
          deferred_shapes_.push_back({comp, inst});
          return;
        }
        break;
      default:
        break;
    }
    shape_error_ = VerifyShape(comp, inst);
  }

  // Whether every computation `inst` calls comes before computations_[c]
  // (its structure was checked without error).
  bool CalleesWalked(size_t c, const HloInstruction* inst) const {
    for (const CalledAttributeView& attr : inst->called_computation_attributes()) {
      for (const HloComputation* called : attr.computations) {
        const std::optional<size_t> position = PositionOf(called);
        if (!position.has_value() || *position >= c) return false;
      }
    }
    return true;
  }

  // The module's hash of a name (HashName), so that one hash serves the
  // module's index and the verifier's own set.
  static uint64_t NameHash(const HloInstruction* inst) { return HashName(inst->name()); }

  // Whether `visit` returns true for an instruction before slot `k` of
  // computations_[c] in the walk's order (computations_ in order, each in
  // list order); stops at the first.
  template <typename Visit>
  bool AnyEarlier(size_t c, size_t k, Visit visit) const {
    for (size_t d = 0; d <= c; ++d) {
      const absl::Span<HloInstruction* const> slots =
          computations_[d]->instruction_slots();
      const size_t end = d < c ? slots.size() : k;
      for (size_t i = 0; i < end; ++i) {
        if (slots[i] != nullptr && visit(slots[i])) return true;
      }
    }
    return false;
  }

  // Records the name of slot `k` of computations_[c]; true if an earlier
  // instruction of the module has the same name.
  bool NameSeenBefore(size_t c, size_t k, uint64_t hash) {
    const HloInstruction* inst = computations_[c]->instruction_slots()[k];
    if (names_by_module_index_) {
      if (hash == 0) hash = NameHash(inst);  // not computed ahead (see VerifyStructure)
      if (module_.IndexedInstruction(inst->name(), hash) == inst) return false;
      // Not indexed as itself: the verifier's own set takes over, with the
      // names of every instruction before this one.
      names_by_module_index_ = false;
      names_.Reserve(instruction_count_);
      AnyEarlier(c, k, [this](const HloInstruction* earlier) {
        names_.Insert(NameHash(earlier));
        return false;
      });
    }
    if (hash == 0) hash = NameHash(inst);  // not computed ahead (see VerifyStructure)
    if (!names_.Insert(hash)) return false;
    // A duplicate, or (rarely) a hash collision.
    const absl::string_view name = inst->name();
    return AnyEarlier(c, k, [&name](const HloInstruction* earlier) { return earlier->name() == name; });
  }

  // Every cache line of the instruction: the walk reads most of them (name,
  // opcode, shape, edges, attributes, the side-struct pointers at the end).
  static void PrefetchInstruction(const HloInstruction* inst) {
    const char* bytes = reinterpret_cast<const char*>(inst);
    for (size_t offset = 0; offset < sizeof(HloInstruction); offset += 64) {
      PrefetchLine(bytes + offset);
    }
    PrefetchLine(bytes + sizeof(HloInstruction) - 1);
  }

  // What the walk reads through the instruction's pointers.
  static void PrefetchReferenced(const HloInstruction* inst) {
    PrefetchLine(inst->name().data());
    PrefetchLine(inst->operands().data());
    PrefetchLine(inst->users().data());
    switch (inst->opcode()) {
      case HloOpcode::kDot: PrefetchLine(&inst->dot_dimension_numbers()); break;
      case HloOpcode::kAllGather:
      case HloOpcode::kReduceScatter:
      case HloOpcode::kAllReduce: PrefetchLine(&inst->replica_groups()); break;
      default: break;
    }
  }

  // ---------------------------------------------------------------------
  // Phase 1b: the call graph is a DAG, as XLA's CallGraph requires (a
  // computation calling itself is phase 1's error, named at the
  // instruction). An iterative three-colour DFS over the computations, one
  // edge per called computation of each instruction: linear in the module.
  absl::Status VerifyCallGraphAcyclic() {
    const size_t n = computations_.size();
    enum : uint8_t { kWhite, kGrey, kBlack };
    std::vector<uint8_t> colour(n, kWhite);
    // The edges are not stored: a frame walks its computation's
    // instructions (its list's slots), their attributes and their
    // computations, in that order.
    struct Frame {
      size_t comp;
      size_t inst = 0;  // slot in computations_[comp]'s list
      size_t attr = 0;
      size_t k = 0;
    };
    struct CallEdge {
      size_t callee;
      const HloInstruction* caller;
    };
    // The next edge out of `top`'s computation, or nullopt.
    auto next_edge = [&](Frame& top) -> std::optional<CallEdge> {
      const absl::Span<HloInstruction* const> slots =
          computations_[top.comp]->instruction_slots();
      for (; top.inst < slots.size(); ++top.inst, top.attr = 0, top.k = 0) {
        const HloInstruction* inst = slots[top.inst];
        if (inst == nullptr) continue;
        const CalledAttributes attrs = inst->called_computation_attributes();
        for (; top.attr < attrs.size(); ++top.attr, top.k = 0) {
          const absl::Span<HloComputation* const> called = attrs[top.attr].computations;
          if (top.k < called.size()) {
            // phase 1: in the module
            return CallEdge{*PositionOf(called[top.k++]), inst};
          }
        }
      }
      return std::nullopt;
    };
    std::vector<Frame> stack;
    for (size_t root = 0; root < n; ++root) {
      if (colour[root] != kWhite) continue;
      colour[root] = kGrey;
      stack.push_back({root});
      while (!stack.empty()) {
        Frame& top = stack.back();
        const std::optional<CallEdge> next = next_edge(top);
        if (!next.has_value()) {
          colour[top.comp] = kBlack;
          stack.pop_back();
          continue;
        }
        const CallEdge& edge = *next;
        if (colour[edge.callee] == kWhite) {
          colour[edge.callee] = kGrey;
          stack.push_back({edge.callee});
        } else if (colour[edge.callee] == kGrey) {
          // The grey computations on the stack from the callee up are the cycle.
          size_t from = stack.size() - 1;
          while (stack[from].comp != edge.callee) --from;
          std::string cycle;
          for (size_t i = from; i < stack.size(); ++i) {
            absl::StrAppend(&cycle, Name(computations_[stack[i].comp]), " -> ");
          }
          absl::StrAppend(&cycle, Name(computations_[edge.callee]));
          return Fail(computations_[top.comp], edge.caller, "calls ",
                      Name(computations_[edge.callee]),
                      ", which closes a cycle in the call graph (", cycle,
                      "); the call graph must be acyclic");
        }
      }
    }
    return absl::OkStatus();
  }

  // ---------------------------------------------------------------------
  // Phase 2: no cycle through operands and control predecessors.
  absl::Status VerifyAcyclic(size_t c) {
    if (acyclic_[c]) return absl::OkStatus();
    const HloComputation* comp = computations_[c];
    if (std::optional<HloComputation::CycleEdge> edge = comp->FindCycle()) {
      return Fail(comp, edge->to, "it is on a cycle (through ",
                  edge->control ? "a control edge" : "operands", " from %", edge->from->name(), ")");
    }
    return absl::OkStatus();
  }

  // ---------------------------------------------------------------------
  // Phase 3: shapes.
  absl::Status VerifyShape(const HloComputation* comp, const HloInstruction* inst) {
    if (shape_memo_.Seen(*inst)) return absl::OkStatus();
    absl::Status status = CheckShape(comp, inst);
    if (status.ok()) shape_memo_.Remember(*inst);
    return status;
  }

  absl::Status CheckShape(const HloComputation* comp, const HloInstruction* inst) {
    switch (inst->opcode()) {
      case HloOpcode::kDot: return VerifyDot(comp, inst);
      case HloOpcode::kReshape: return VerifyReshape(comp, inst);
      case HloOpcode::kGetTupleElement: return VerifyGetTupleElement(comp, inst);
      case HloOpcode::kTuple: return VerifyTuple(comp, inst);
      case HloOpcode::kParameter:
        if (inst->shape().IsTuple() || inst->shape().IsArray() || inst->shape().IsToken() ||
            inst->shape().IsOpaque() || inst->shape().IsBuffer()) {
          return absl::OkStatus();
        }
        return Fail(comp, inst, "parameter has no valid shape");
      case HloOpcode::kConvert: return VerifyConvert(comp, inst);
      case HloOpcode::kBroadcast: return VerifyBroadcast(comp, inst);
      case HloOpcode::kTranspose: return VerifyTranspose(comp, inst);
      case HloOpcode::kAllGather: return VerifyGatherOrScatter(comp, inst, /*gather=*/true);
      case HloOpcode::kReduceScatter: return VerifyGatherOrScatter(comp, inst, /*gather=*/false);
      case HloOpcode::kAllReduce: return VerifyAllReduce(comp, inst);
      case HloOpcode::kSend: return VerifySendRecv(comp, inst, /*send=*/true);
      case HloOpcode::kRecv: return VerifySendRecv(comp, inst, /*send=*/false);
      case HloOpcode::kSendDone: return VerifyDone(comp, inst, HloOpcode::kSend);
      case HloOpcode::kRecvDone: return VerifyDone(comp, inst, HloOpcode::kRecv);
      case HloOpcode::kWhile: return VerifyWhile(comp, inst);
      case HloOpcode::kConditional: return VerifyConditional(comp, inst);
      case HloOpcode::kCall: return VerifyCall(comp, inst);
      case HloOpcode::kAbs:
      case HloOpcode::kAdd:
      case HloOpcode::kAnd:
      case HloOpcode::kAtan2:
      case HloOpcode::kCbrt:
      case HloOpcode::kCeil:
      case HloOpcode::kClz:
      case HloOpcode::kCompare:
      case HloOpcode::kComplex:
      case HloOpcode::kCos:
      case HloOpcode::kDivide:
      case HloOpcode::kErf:
      case HloOpcode::kExp:
      case HloOpcode::kExpm1:
      case HloOpcode::kFloor:
      case HloOpcode::kImag:
      case HloOpcode::kIsFinite:
      case HloOpcode::kLog:
      case HloOpcode::kLog1p:
      case HloOpcode::kLogistic:
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
      case HloOpcode::kMultiply:
      case HloOpcode::kNegate:
      case HloOpcode::kNot:
      case HloOpcode::kOr:
      case HloOpcode::kPopulationCount:
      case HloOpcode::kPower:
      case HloOpcode::kReal:
      case HloOpcode::kReducePrecision:
      case HloOpcode::kRemainder:
      case HloOpcode::kRoundNearestAfz:
      case HloOpcode::kRoundNearestEven:
      case HloOpcode::kRsqrt:
      case HloOpcode::kShiftLeft:
      case HloOpcode::kShiftRightArithmetic:
      case HloOpcode::kShiftRightLogical:
      case HloOpcode::kSign:
      case HloOpcode::kSin:
      case HloOpcode::kSqrt:
      case HloOpcode::kSubtract:
      case HloOpcode::kTan:
      case HloOpcode::kTanh:
      case HloOpcode::kXor: return VerifyElementwise(comp, inst);
      case HloOpcode::kSelect: return VerifyElementwise(comp, inst, /*scalar_operands=*/{0});
      case HloOpcode::kClamp: return VerifyElementwise(comp, inst, /*scalar_operands=*/{0, 2});
      // Nothing to check; for kCustomCall RunTouched does not even call
      // this (a check added here for it must be added there).
      default: return absl::OkStatus();
    }
  }

  // Elementwise ops map operands of one shape to a result of that shape.
  // Only dimensions are compared: the element type changes legitimately
  // (compare and is-finite give pred, real, imag and abs of a complex give
  // its float type, complex builds one). The operands listed in
  // `scalar_operands` may also be scalars: select's predicate (XLA's own
  // tests write `select(pred[] p, f32[16] a, f32[16] b)`), clamp's bounds.
  absl::Status VerifyElementwise(const HloComputation* comp, const HloInstruction* inst,
                                 std::initializer_list<int64_t> scalar_operands = {}) {
    const Shape& out = inst->shape();
    if (auto s = RequireArray(comp, inst, out, "result"); !s.ok()) return s;
    for (int64_t i = 0; i < inst->operand_count(); ++i) {
      const Shape& in = inst->operand(i)->shape();
      // The parser gives every instruction written with the same shape the
      // same Shape object: the usual case costs a comparison of addresses.
      if (&in == &out) continue;
      if (!in.IsArray()) return Fail(comp, inst, "operand ", i, " must be an array, got ", S(in));
      if (in.rank() == 0 && absl::c_linear_search(scalar_operands, i)) continue;
      if (!ShapesAgree(in, out, TypeCheck::kNone)) {
        return Fail(comp, inst, HloOpcodeString(inst->opcode()),
                    " is elementwise: operand ", i, " ", S(in), " and result ", S(out),
                    " must have the same dimensions");
      }
    }
    return absl::OkStatus();
  }

  absl::Status RequireArray(const HloComputation* comp, const HloInstruction* inst,
                            const Shape& shape, absl::string_view what) {
    if (shape.IsArray()) return absl::OkStatus();
    return Fail(comp, inst, what, " must be an array, got ", S(shape));
  }

  absl::Status VerifyDot(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& lhs = inst->operand(0)->shape();
    const Shape& rhs = inst->operand(1)->shape();
    const Shape& out = inst->shape();
    if (auto s = RequireArray(comp, inst, lhs, "lhs operand"); !s.ok()) return s;
    if (auto s = RequireArray(comp, inst, rhs, "rhs operand"); !s.ok()) return s;
    if (auto s = RequireArray(comp, inst, out, "result"); !s.ok()) return s;
    const DotDimensionNumbers& dn = inst->dot_dimension_numbers();
    if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size()) {
      return Fail(comp, inst, "lhs has ", dn.lhs_batch_dimensions.size(),
                  " batch dimension(s) but rhs has ", dn.rhs_batch_dimensions.size());
    }
    if (dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size()) {
      return Fail(comp, inst, "lhs has ", dn.lhs_contracting_dimensions.size(),
                  " contracting dimension(s) but rhs has ", dn.rhs_contracting_dimensions.size());
    }
    // Every dimension named at most once per side, and in range.
    auto check_side = [&](const Shape& shape, const std::vector<int64_t>& batch,
                          const std::vector<int64_t>& contracting, absl::string_view side,
                          std::vector<bool>* used) -> absl::Status {
      used->assign(shape.rank(), false);
      for (int pass = 0; pass < 2; ++pass) {
        const std::vector<int64_t>& dims = pass == 0 ? batch : contracting;
        absl::string_view kind = pass == 0 ? "batch" : "contracting";
        for (int64_t d : dims) {
          if (d < 0 || d >= shape.rank()) {
            return Fail(comp, inst, side, " ", kind, " dimension ", d,
                        " is out of range for rank ", shape.rank(), " (", S(shape), ")");
          }
          if ((*used)[d]) {
            return Fail(comp, inst, side, " dimension ", d,
                        " is named more than once among batch and contracting dimensions");
          }
          (*used)[d] = true;
        }
      }
      return absl::OkStatus();
    };
    std::vector<bool>& lhs_used = lhs_used_;
    std::vector<bool>& rhs_used = rhs_used_;
    if (auto s = check_side(lhs, dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions, "lhs",
                            &lhs_used);
        !s.ok()) {
      return s;
    }
    if (auto s = check_side(rhs, dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, "rhs",
                            &rhs_used);
        !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < dn.lhs_batch_dimensions.size(); ++i) {
      const int64_t l = dn.lhs_batch_dimensions[i], r = dn.rhs_batch_dimensions[i];
      if (!DimsAgree(lhs, l, rhs, r)) {
        return Fail(comp, inst, "lhs batch dimension ", l, " has size ", lhs.dimensions(l),
                    " but rhs batch dimension ", r, " has size ", rhs.dimensions(r));
      }
    }
    for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
      const int64_t l = dn.lhs_contracting_dimensions[i], r = dn.rhs_contracting_dimensions[i];
      if (!DimsAgree(lhs, l, rhs, r)) {
        return Fail(comp, inst, "lhs contracting dimension ", l, " has size ", lhs.dimensions(l),
                    " but rhs contracting dimension ", r, " has size ", rhs.dimensions(r));
      }
    }
    // Result: batch dims, then lhs free dims, then rhs free dims, in order.
    std::vector<std::pair<const Shape*, int64_t>>& expected = expected_dims_;
    expected.clear();
    for (int64_t d : dn.lhs_batch_dimensions) expected.push_back({&lhs, d});
    for (int64_t d = 0; d < lhs.rank(); ++d) {
      if (!lhs_used[d]) expected.push_back({&lhs, d});
    }
    for (int64_t d = 0; d < rhs.rank(); ++d) {
      if (!rhs_used[d]) expected.push_back({&rhs, d});
    }
    if (static_cast<int64_t>(expected.size()) != out.rank()) {
      return Fail(comp, inst, "result ", S(out), " has rank ", out.rank(), " but ",
                  S(lhs), " x ", S(rhs), " with these dimension numbers gives rank ",
                  expected.size(), " (batch, then lhs free, then rhs free dimensions)");
    }
    for (int64_t i = 0; i < out.rank(); ++i) {
      const auto& [shape, d] = expected[i];
      if (!DimsAgree(out, i, *shape, d)) {
        return Fail(comp, inst, "result dimension ", i, " has size ", out.dimensions(i),
                    " but ", shape == &lhs ? "lhs" : "rhs", " dimension ", d, " has size ",
                    shape->dimensions(d), " (result ", S(out), ")");
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifyReshape(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& in = inst->operand(0)->shape();
    const Shape& out = inst->shape();
    if (auto s = RequireArray(comp, inst, in, "operand"); !s.ok()) return s;
    if (auto s = RequireArray(comp, inst, out, "result"); !s.ok()) return s;
    if (!SameType(in.element_type(), out.element_type())) {
      return Fail(comp, inst, "reshape changes the element type from ",
                  PrimitiveTypeName(in.element_type()), " to ",
                  PrimitiveTypeName(out.element_type()));
    }
    if (in.is_static() && out.is_static() && in.checked_elements() != out.checked_elements()) {
      return Fail(comp, inst, "reshape of ", S(in), " (", in.elements(), " elements) to ",
                  S(out), " (", out.elements(), " elements) changes the element count");
    }
    return absl::OkStatus();
  }

  absl::Status VerifyGetTupleElement(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& in = inst->operand(0)->shape();
    if (!in.IsTuple()) {
      return Fail(comp, inst, "operand %", inst->operand(0)->name(), " is not a tuple: ", S(in));
    }
    const int64_t index = inst->tuple_index();
    if (index < 0 || index >= in.tuple_shapes_size()) {
      return Fail(comp, inst, "tuple index ", index, " is out of range for ", S(in), " (",
                  in.tuple_shapes_size(), " element(s))");
    }
    if (!Agree(inst->shape(), in.tuple_shapes(index))) {
      return Fail(comp, inst, "shape ", S(inst->shape()), " is not element ", index, " of ",
                  S(in), ", which is ", S(in.tuple_shapes(index)));
    }
    return absl::OkStatus();
  }

  absl::Status VerifyTuple(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& out = inst->shape();
    if (!out.IsTuple() || out.tuple_shapes_size() != inst->operand_count()) {
      return Fail(comp, inst, "a tuple of ", inst->operand_count(),
                  " operand(s) must have a tuple shape of as many elements, got ", S(out));
    }
    for (int64_t i = 0; i < inst->operand_count(); ++i) {
      if (!Agree(out.tuple_shapes(i), inst->operand(i)->shape())) {
        return Fail(comp, inst, "element ", i, " has shape ", S(out.tuple_shapes(i)),
                    " but operand %", inst->operand(i)->name(), " has shape ",
                    S(inst->operand(i)->shape()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifyConvert(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& in = inst->operand(0)->shape();
    const Shape& out = inst->shape();
    if (auto s = RequireArray(comp, inst, in, "operand"); !s.ok()) return s;
    if (auto s = RequireArray(comp, inst, out, "result"); !s.ok()) return s;
    if (!ShapesAgree(in, out, TypeCheck::kNone)) {
      return Fail(comp, inst, "convert must keep the dimensions: operand ", S(in), ", result ",
                  S(out));
    }
    return absl::OkStatus();
  }

  absl::Status VerifyBroadcast(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& in = inst->operand(0)->shape();
    const Shape& out = inst->shape();
    if (auto s = RequireArray(comp, inst, in, "operand"); !s.ok()) return s;
    if (auto s = RequireArray(comp, inst, out, "result"); !s.ok()) return s;
    if (!SameType(in.element_type(), out.element_type())) {
      return Fail(comp, inst, "broadcast changes the element type from ",
                  PrimitiveTypeName(in.element_type()), " to ",
                  PrimitiveTypeName(out.element_type()));
    }
    static const std::vector<int64_t> kNone;
    const std::vector<int64_t>& dims = inst->dimensions() ? *inst->dimensions() : kNone;
    if (static_cast<int64_t>(dims.size()) != in.rank()) {
      return Fail(comp, inst, "dimensions={", absl::StrJoin(dims, ","), "} has ", dims.size(),
                  " entries but the operand ", S(in), " has rank ", in.rank());
    }
    for (int64_t i = 0; i < in.rank(); ++i) {
      const int64_t d = dims[i];
      if (d < 0 || d >= out.rank()) {
        return Fail(comp, inst, "dimensions[", i, "]=", d, " is out of range for result ",
                    S(out));
      }
      if (!DimsAgree(in, i, out, d)) {
        return Fail(comp, inst, "operand dimension ", i, " has size ", in.dimensions(i),
                    " but result dimension ", d, " it maps to has size ", out.dimensions(d));
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifyTranspose(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& in = inst->operand(0)->shape();
    const Shape& out = inst->shape();
    if (auto s = RequireArray(comp, inst, in, "operand"); !s.ok()) return s;
    if (auto s = RequireArray(comp, inst, out, "result"); !s.ok()) return s;
    static const std::vector<int64_t> kNone;
    const std::vector<int64_t>& perm = inst->dimensions() ? *inst->dimensions() : kNone;
    if (static_cast<int64_t>(perm.size()) != in.rank() || out.rank() != in.rank()) {
      return Fail(comp, inst, "dimensions={", absl::StrJoin(perm, ","),
                  "} must be a permutation of the operand's ", in.rank(),
                  " dimensions, and the result rank must be the same (operand ", S(in),
                  ", result ", S(out), ")");
    }
    std::vector<bool>& seen = perm_seen_;
    seen.assign(perm.size(), false);
    for (int64_t p : perm) {
      if (p < 0 || p >= in.rank() || seen[p]) {
        return Fail(comp, inst, "dimensions={", absl::StrJoin(perm, ","),
                    "} is not a permutation");
      }
      seen[p] = true;
    }
    if (!SameType(in.element_type(), out.element_type())) {
      return Fail(comp, inst, "transpose changes the element type from ",
                  PrimitiveTypeName(in.element_type()), " to ",
                  PrimitiveTypeName(out.element_type()));
    }
    for (int64_t i = 0; i < out.rank(); ++i) {
      if (!DimsAgree(out, i, in, perm[i])) {
        return Fail(comp, inst, "result dimension ", i, " has size ", out.dimensions(i),
                    " but operand dimension ", perm[i], " has size ", in.dimensions(perm[i]));
      }
    }
    return absl::OkStatus();
  }

  // The per-operand result shapes of a variadic collective, into outputs_:
  // the result itself for one operand, the tuple elements for several.
  absl::Status CollectiveOutputs(const HloComputation* comp, const HloInstruction* inst) {
    const Shape& out = inst->shape();
    const int64_t n = inst->operand_count();
    std::vector<const Shape*>& outputs = outputs_;
    outputs.clear();
    if (n == 0) return Fail(comp, inst, HloOpcodeString(inst->opcode()), " has no operands");
    if (n == 1 && !out.IsTuple()) {
      outputs.push_back(&out);
      return absl::OkStatus();
    }
    if (!out.IsTuple() || out.tuple_shapes_size() != n) {
      return Fail(comp, inst, "with ", n, " operand(s) the result must be a tuple of ", n,
                  " shapes, got ", S(out));
    }
    for (const Shape& s : out.tuple_shapes()) outputs.push_back(&s);
    return absl::OkStatus();
  }

  absl::Status VerifyGatherOrScatter(const HloComputation* comp, const HloInstruction* inst,
                                     bool gather) {
    absl::string_view op = HloOpcodeString(inst->opcode());
    auto size_or = GroupSize(*inst, /*uniform_required=*/true);
    if (!size_or.ok()) return Fail(comp, inst, size_or.status().message());
    const std::optional<int64_t> group_size = *size_or;
    if (!inst->dimensions().has_value() || inst->dimensions()->size() != 1) {
      return Fail(comp, inst, op, " needs dimensions={d} with exactly one dimension");
    }
    const int64_t dim = inst->collective_dimension();
    if (absl::Status s = CollectiveOutputs(comp, inst); !s.ok()) return s;
    const std::vector<const Shape*>& outputs = outputs_;
    for (int64_t i = 0; i < inst->operand_count(); ++i) {
      const Shape& in = inst->operand(i)->shape();
      const Shape& out = *outputs[i];
      if (!in.IsArray()) {
        return Fail(comp, inst, "operand ", i, " must be an array, got ", S(in));
      }
      if (!out.IsArray()) {
        return Fail(comp, inst, "result ", i, " must be an array, got ", S(out));
      }
      if (in.rank() == 0) {
        // A rank-0 operand (Neuron's token-threaded form) passes through.
        if (!ShapesAgree(in, out, TypeCheck::kNone)) {
          return Fail(comp, inst, "rank-0 operand ", i, " must pass through unchanged, but ",
                      S(in), " becomes ", S(out));
        }
        continue;
      }
      if (dim < 0 || dim >= in.rank()) {
        return Fail(comp, inst, op, " dimension ", dim, " is out of range for operand ", i,
                    " ", S(in));
      }
      if (out.rank() != in.rank()) {
        return Fail(comp, inst, "result ", i, " ", S(out), " must have the rank of operand ", i,
                    " ", S(in));
      }
      for (int64_t d = 0; d < in.rank(); ++d) {
        if (d == dim) continue;
        if (!DimsAgree(in, d, out, d)) {
          return Fail(comp, inst, "result ", i, " ", S(out), " differs from operand ", i, " ",
                      S(in), " in dimension ", d, ", which is not the ", op, " dimension ", dim);
        }
      }
      if (!group_size.has_value() || in.is_dynamic_dimension(dim) ||
          out.is_dynamic_dimension(dim)) {
        continue;
      }
      const int64_t g = *group_size;
      if (gather) {
        int64_t expected;
        if (__builtin_mul_overflow(in.dimensions(dim), g, &expected) ||
            expected != out.dimensions(dim)) {
          return Fail(comp, inst, "result ", i, " ", S(out), " should have size ",
                      in.dimensions(dim), " * ", g, " (group size) in dimension ", dim,
                      ", as operand ", i, " is ", S(in));
        }
      } else {
        if (g <= 0 || in.dimensions(dim) % g != 0) {
          return Fail(comp, inst, "operand ", i, " ", S(in), " dimension ", dim, " of size ",
                      in.dimensions(dim), " is not divisible by the group size ", g);
        }
        if (out.dimensions(dim) != in.dimensions(dim) / g) {
          return Fail(comp, inst, "result ", i, " ", S(out), " should have size ",
                      in.dimensions(dim), " / ", g, " (group size) in dimension ", dim,
                      ", as operand ", i, " is ", S(in));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifyAllReduce(const HloComputation* comp, const HloInstruction* inst) {
    auto size_or = GroupSize(*inst, /*uniform_required=*/false);
    if (!size_or.ok()) return Fail(comp, inst, size_or.status().message());
    if (inst->to_apply() == nullptr) {
      return Fail(comp, inst, "all-reduce needs a to_apply computation");
    }
    if (absl::Status s = CollectiveOutputs(comp, inst); !s.ok()) return s;
    for (int64_t i = 0; i < inst->operand_count(); ++i) {
      const Shape& in = inst->operand(i)->shape();
      if (!Agree(in, *outputs_[i])) {
        return Fail(comp, inst, "result ", i, " ", S(*outputs_[i]),
                    " must have the shape of operand ", i, " ", S(in));
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifySendRecv(const HloComputation* comp, const HloInstruction* inst,
                              bool send) {
    const Shape& out = inst->shape();
    const HloInstruction* token = inst->operand(send ? 1 : 0);
    if (!token->shape().IsToken()) {
      return Fail(comp, inst, "operand ", send ? 1 : 0, " must be a token, got ",
                  S(token->shape()));
    }
    if (!out.IsTuple() || out.tuple_shapes_size() != 3 ||
        !IsScalarOf(out.tuple_shapes(1), PrimitiveType::U32) || !out.tuple_shapes(2).IsToken()) {
      return Fail(comp, inst, send ? "send" : "recv",
                  " must return (data, u32[], token[]), got ", S(out));
    }
    if (send && !Agree(out.tuple_shapes(0), inst->operand(0)->shape())) {
      return Fail(comp, inst, "send returns data ", S(out.tuple_shapes(0)),
                  " but sends operand ", S(inst->operand(0)->shape()));
    }
    return absl::OkStatus();
  }

  // send-done / recv-done. The operand is the send/recv itself, or (XLA's
  // pipelined send/recv) a get-tuple-element that carries the send/recv
  // value through a loop; following that value through the loop is
  // dataflow analysis this verifier does not do, so then only the shape of
  // the value is checked, not the channel id.
  absl::Status VerifyDone(const HloComputation* comp, const HloInstruction* inst,
                          HloOpcode start) {
    const HloInstruction* operand = inst->operand(0);
    absl::string_view start_name = HloOpcodeString(start);
    const bool pipelined = operand->opcode() == HloOpcode::kGetTupleElement;
    if (operand->opcode() != start && !pipelined) {
      return Fail(comp, inst, "operand %", operand->name(), " must be a ", start_name,
                  " (or a get-tuple-element carrying one through a loop), not a ",
                  HloOpcodeString(operand->opcode()));
    }
    if (!pipelined && inst->channel_id() != operand->channel_id()) {
      auto id = [](const std::optional<int64_t>& c) {
        return c ? absl::StrCat(*c) : std::string("none");
      };
      return Fail(comp, inst, "channel_id ", id(inst->channel_id()), " does not match channel_id ",
                  id(operand->channel_id()), " of its ", start_name, " %", operand->name());
    }
    const Shape& value = operand->shape();
    if (!value.IsTuple() || value.tuple_shapes_size() != 3 || !value.tuple_shapes(2).IsToken()) {
      return Fail(comp, inst, "operand %", operand->name(), " must be a ", start_name,
                  " value (data, u32[], token[]), got ", S(value));
    }
    if (start == HloOpcode::kSend) {
      if (!inst->shape().IsToken()) {
        return Fail(comp, inst, "send-done must return token[], got ", S(inst->shape()));
      }
    } else {
      const Shape& out = inst->shape();
      if (!out.IsTuple() || out.tuple_shapes_size() != 2 || !out.tuple_shapes(1).IsToken() ||
          !Agree(out.tuple_shapes(0), value.tuple_shapes(0))) {
        return Fail(comp, inst, "recv-done must return (data, token[]) with the data shape ",
                    S(value.tuple_shapes(0)), " of its recv, got ", S(out));
      }
    }
    return absl::OkStatus();
  }

  // Signature checks of called computations: parameter count and shapes
  // against the values passed, root against the value returned.
  absl::Status CheckCalled(const HloComputation* comp, const HloInstruction* inst,
                           const HloComputation* called, absl::string_view role,
                           absl::Span<const Shape* const> params, const Shape* result) {
    if (called->num_parameters() != static_cast<int64_t>(params.size())) {
      return Fail(comp, inst, role, " ", Name(called), " takes ", called->num_parameters(),
                  " parameter(s) but is passed ", params.size());
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const HloInstruction* p = called->parameter_instruction(static_cast<int64_t>(i));
      if (!Agree(p->shape(), *params[i])) {
        return Fail(comp, inst, role, " ", Name(called), " parameter ", i, " has shape ",
                    S(p->shape()), " but is passed ", S(*params[i]));
      }
    }
    if (result != nullptr && !Agree(called->root_instruction()->shape(), *result)) {
      return Fail(comp, inst, role, " ", Name(called), " returns ",
                  S(called->root_instruction()->shape()), " but ", S(*result), " is expected");
    }
    return absl::OkStatus();
  }

  absl::Status VerifyWhile(const HloComputation* comp, const HloInstruction* inst) {
    const HloComputation* cond = inst->while_condition();
    const HloComputation* body = inst->while_body();
    if (cond == nullptr || body == nullptr) {
      return Fail(comp, inst, "while needs exactly one condition and one body computation");
    }
    const Shape& init = inst->operand(0)->shape();
    if (!Agree(inst->shape(), init)) {
      return Fail(comp, inst, "while returns ", S(inst->shape()),
                  " but its initial value is ", S(init));
    }
    const Shape* params[] = {&init};
    if (auto s = CheckCalled(comp, inst, body, "body", params, &init); !s.ok()) return s;
    if (auto s = CheckCalled(comp, inst, cond, "condition", params, nullptr); !s.ok()) return s;
    if (!IsScalarPred(cond->root_instruction()->shape())) {
      return Fail(comp, inst, "condition ", Name(cond), " must return pred[], returns ",
                  S(cond->root_instruction()->shape()));
    }
    return absl::OkStatus();
  }

  absl::Status VerifyConditional(const HloComputation* comp, const HloInstruction* inst) {
    std::vector<const HloComputation*> branches;
    auto listed = inst->called_computations("branch_computations");
    const HloComputation* on_true = inst->called_computation("true_computation");
    const HloComputation* on_false = inst->called_computation("false_computation");
    const bool by_pred = on_true != nullptr || on_false != nullptr;
    if (by_pred) {
      if (on_true == nullptr || on_false == nullptr || !listed.empty()) {
        return Fail(comp, inst, "conditional needs both true_computation and false_computation,",
                    " or branch_computations");
      }
      branches = {on_true, on_false};
    } else {
      branches.assign(listed.begin(), listed.end());
      if (branches.empty()) return Fail(comp, inst, "conditional has no branch computations");
    }
    if (inst->operand_count() != static_cast<int64_t>(branches.size()) + 1) {
      return Fail(comp, inst, "conditional with ", branches.size(), " branches needs ",
                  branches.size() + 1, " operands, has ", inst->operand_count());
    }
    const Shape& index = inst->operand(0)->shape();
    if (by_pred ? !IsScalarPred(index) : !IsScalarOf(index, PrimitiveType::S32)) {
      return Fail(comp, inst, "branch selector must be ", by_pred ? "pred[]" : "s32[]",
                  ", got ", S(index));
    }
    for (size_t b = 0; b < branches.size(); ++b) {
      const Shape* params[] = {&inst->operand(b + 1)->shape()};
      std::string role = absl::StrCat("branch ", b);
      if (auto s = CheckCalled(comp, inst, branches[b], role, params, &inst->shape()); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifyCall(const HloComputation* comp, const HloInstruction* inst) {
    const HloComputation* callee = inst->to_apply();
    if (callee == nullptr) return Fail(comp, inst, "call needs exactly one to_apply computation");
    std::vector<const Shape*>& params = call_params_;
    params.clear();
    for (const HloInstruction* operand : inst->operands()) params.push_back(&operand->shape());
    return CheckCalled(comp, inst, callee, "to_apply", params, &inst->shape());
  }

  // The group size a collective's replica groups imply, per XLA's group modes:
  //   no channel_id                         cross-replica: groups over replicas;
  //                                         {} = all replica_count replicas.
  //   channel_id, use_global_device_ids     cross-replica-and-partition: each
  //     absent or false                     group of replicas spans every
  //                                         partition: size * num_partitions.
  //   channel_id, use_global_device_ids     flattened ids: groups of devices;
  //     true                                {} is an error.
  // nullopt when it depends on a header value that is not written (the module
  // was written for a configuration we do not know) or on a raw group form.
  absl::StatusOr<std::optional<int64_t>> GroupSize(const HloInstruction& inst,
                                                   bool uniform_required) {
    const bool has_channel = inst.channel_id().has_value();
    const bool global_ids = inst.use_global_device_ids().value_or(false);
    if (global_ids && !has_channel) {
      return absl::InvalidArgumentError(
          "use_global_device_ids=true is only valid with a channel_id (XLA's group modes)");
    }
    static const ReplicaGroups* const kAll = new ReplicaGroups();  // `{}`
    const ReplicaGroups& groups = inst.replica_groups() ? *inst.replica_groups() : *kAll;
    const absl::StatusOr<GroupsShape>& shape = CheckReplicaGroupsCached(groups, uniform_required);
    if (!shape.ok()) return shape.status();
    std::optional<int64_t> base;  // size of one replica group as written
    switch (shape->kind) {
      case GroupsShape::Kind::kRaw: return std::optional<int64_t>();
      case GroupsShape::Kind::kAll: break;
      case GroupsShape::Kind::kSized: base = shape->size; break;
    }
    if (!base.has_value()) {  // `{}` or absent: every participant
      if (global_ids) {
        return absl::InvalidArgumentError(
            "use_global_device_ids=true needs explicit replica_groups (flattened-id mode)");
      }
      base = module_.replica_count();
      if (!base.has_value()) return std::optional<int64_t>();
    }
    if (has_channel && !global_ids) {
      const std::optional<int64_t>& partitions = module_.num_partitions();
      if (!partitions.has_value()) return std::optional<int64_t>();
      int64_t size;
      if (__builtin_mul_overflow(*base, *partitions, &size)) return std::optional<int64_t>();
      return std::optional<int64_t>(size);
    }
    return base;
  }

  // CheckReplicaGroups, remembered for the last few lists: collectives
  // mostly share a handful of immutable lists, so most lookups hit. Bounded
  // so that a module of all-distinct lists stays linear.
  const absl::StatusOr<GroupsShape>& CheckReplicaGroupsCached(const ReplicaGroups& groups,
                                                              bool uniform_required) {
    for (const GroupsCacheEntry& entry : groups_cache_) {
      if (entry.uniform_required == uniform_required && entry.groups.SharesContentsWith(groups)) {
        return entry.shape;
      }
    }
    GroupsCacheEntry entry{groups, uniform_required,
                           CheckReplicaGroups(groups, uniform_required, &seen_ids_)};
    if (groups_cache_.size() < kGroupsCacheSize) {
      groups_cache_.push_back(std::move(entry));
      return groups_cache_.back().shape;
    }
    GroupsCacheEntry& slot = groups_cache_[groups_cache_next_];
    groups_cache_next_ = (groups_cache_next_ + 1) % kGroupsCacheSize;
    slot = std::move(entry);
    return slot.shape;
  }

  // Shapes agree, element types per the mixed-precision option.
  bool Agree(const Shape& a, const Shape& b) const {
    return ShapesAgree(a, b,
                       options_.allow_mixed_precision ? TypeCheck::kIgnoreFpPrecision
                                                      : TypeCheck::kExact);
  }
  bool SameType(PrimitiveType a, PrimitiveType b) const {
    return SameElementType(a, b, options_.allow_mixed_precision);
  }

  const HloModule& module_;
  const HloVerifierOptions options_;
  // The module's computations by position, read where the module holds
  // them (a copy was 0.8 MB for 100,000 computations; docs/performance.md,
  // "twenty-third session: a smaller instruction").
  class ComputationSlots {
   public:
    ComputationSlots() = default;
    explicit ComputationSlots(absl::Span<const std::unique_ptr<HloComputation>> slots)
        : slots_(slots) {}
    size_t size() const { return slots_.size(); }
    HloComputation* operator[](size_t c) const { return slots_[c].get(); }

   private:
    absl::Span<const std::unique_ptr<HloComputation>> slots_;
  };
  ComputationSlots computations_;
  // Each computation's position in computations_, found by the
  // computation's address: a set of the positions (4 bytes a slot), hashed
  // and compared through computations_, where a map from the address to
  // the position took 16 (100,000 computations: 0.66 MB, was 2.2 MB;
  // docs/performance.md, "twenty-second session"). A module of 2^32
  // computations would take terabytes.
  struct PositionHash {
    using is_transparent = void;
    const ComputationSlots* computations = nullptr;
    size_t operator()(const HloComputation* comp) const { return absl::HashOf(comp); }
    size_t operator()(uint32_t c) const {
      return absl::HashOf(static_cast<const HloComputation*>((*computations)[c]));
    }
  };
  struct PositionEq {
    using is_transparent = void;
    const ComputationSlots* computations = nullptr;
    const HloComputation* Key(const HloComputation* comp) const { return comp; }
    const HloComputation* Key(uint32_t c) const { return (*computations)[c]; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Key(a) == Key(b);
    }
  };
  using ComputationIndex = absl::flat_hash_set<uint32_t, PositionHash, PositionEq>;
  ComputationIndex computation_index_;
  // Names are checked against the module's own name index while every
  // instruction is found there as itself (HloModule::IndexedInstruction:
  // then no name is used twice), and with names_ from the first one that is
  // not: a parsed module's index holds every instruction, so its names need
  // no second table (8 MB for 400,000 names; docs/performance.md, "twelfth
  // session"). HILO_VERIFY_NAME_INDEX=0 always uses names_.
  bool names_by_module_index_ = NamesByModuleIndex();
  size_t instruction_count_ = 0;
  NameHashSet names_;
  // Per computation: no cycle is possible (unique ids descend along edges).
  std::vector<bool> acyclic_;

  // Edge bookkeeping of the computation being walked.
  struct EdgeState {
    absl::flat_hash_set<std::pair<const HloInstruction*, const HloInstruction*>> uses;
    absl::flat_hash_set<std::pair<const HloInstruction*, const HloInstruction*>> control;
    std::vector<DeferredEdgeCheck> deferred;
    size_t distinct_uses = 0;  // distinct (operand, user) edges
    size_t user_edges = 0;
    size_t pred_edges = 0;
    // Every operand and control predecessor has a smaller unique id than
    // its user: then there is no cycle and phase 2 need not search for one.
    bool ids_descend = true;
    void Clear() {
      uses.clear();
      control.clear();
      deferred.clear();
      distinct_uses = user_edges = pred_edges = 0;
      ids_descend = true;
    }
  };
  EdgeState edges_;

  // Phase 3 as the walk left it: the checks it deferred, in module order,
  // and the first early check that failed.
  std::vector<std::pair<const HloComputation*, const HloInstruction*>> deferred_shapes_;
  absl::Status shape_error_;

  struct GroupsCacheEntry {
    ReplicaGroups groups;  // holds the shared contents alive
    bool uniform_required;
    absl::StatusOr<GroupsShape> shape;
  };
  static constexpr size_t kGroupsCacheSize = 8;
  std::vector<GroupsCacheEntry> groups_cache_;
  size_t groups_cache_next_ = 0;

  ShapeMemo shape_memo_;

  // Which users of the instruction CheckUsers reads (one with more than
  // kDirectSearchOperands users) it has seen: a bit per unique id (ids
  // are dense in a module), where a set of the users took 12 bytes each
  // (1.2 MB for a parameter 100,000 calls read; docs/performance.md,
  // "twenty-second session"). A user whose bit is set already is the same
  // user again or one that shares its id with another (a module's ids are
  // unique unless a bug made them not): from then on, and for a user
  // without an id or with one far beyond the module's count, an exact set
  // answers.
  class UserSightings {
   public:
    // Whether users[u] is one of users[0, u), given that users[0, u) were
    // asked about (in order) since the last Forget.
    bool Repeated(absl::Span<HloInstruction* const> users, size_t u, size_t instruction_count) {
      const HloInstruction* user = users[u];
      if (!exact_mode_) {
        const int64_t id = user == nullptr ? -1 : user->unique_id();
        // Ids stay below the module's count but for removed instructions:
        // a bound keeps a stray id from sizing the bits.
        const uint64_t bound = 2 * static_cast<uint64_t>(instruction_count) + 4096;
        if (id >= 0 && static_cast<uint64_t>(id) < bound) {
          const size_t word = static_cast<size_t>(id) / 64;
          const uint64_t bit = uint64_t{1} << (id % 64);
          if (word >= bits_.size()) bits_.resize(word + 1, 0);
          if ((bits_[word] & bit) == 0) {
            bits_[word] |= bit;
            return false;
          }
        }
        exact_mode_ = true;
        exact_.reserve(users.size());
        exact_.insert(users.begin(), users.begin() + u);
      }
      return !exact_.insert(user).second;
    }
    // Clears what `asked` (the users asked about) left.
    void Forget(absl::Span<HloInstruction* const> asked) {
      for (const HloInstruction* user : asked) {
        const int64_t id = user == nullptr ? -1 : user->unique_id();
        const size_t word = static_cast<size_t>(id) / 64;
        if (id >= 0 && word < bits_.size()) bits_[word] = 0;
      }
      if (exact_mode_) {
        exact_ = absl::flat_hash_set<const HloInstruction*>();
        exact_mode_ = false;
      }
    }

   private:
    std::vector<uint64_t> bits_;
    bool exact_mode_ = false;
    absl::flat_hash_set<const HloInstruction*> exact_;
  };
  UserSightings user_sightings_;

  // Scratch reused across instructions instead of allocated for each.
  std::vector<bool> seen_ids_;
  std::vector<const HloInstruction*> params_;
  std::vector<const HloInstruction*> by_number_;
  std::vector<bool> lhs_used_;
  std::vector<bool> rhs_used_;
  std::vector<std::pair<const Shape*, int64_t>> expected_dims_;
  std::vector<bool> perm_seen_;
  std::vector<const Shape*> outputs_;
  std::vector<const Shape*> call_params_;
};

}  // namespace

absl::Status VerifyHloModule(const HloModule& module) {
  return VerifyHloModule(module, HloVerifierOptions());
}

absl::Status VerifyHloModule(const HloModule& module, const HloVerifierOptions& options) {
  return Verifier(module, options).Run();
}

bool ReroutedUserNeedsNoCheck(HloOpcode user_opcode) {
  return user_opcode != HloOpcode::kSendDone && user_opcode != HloOpcode::kRecvDone;
}

absl::Status VerifyHloInstructions(const HloModule& module,
                                  absl::Span<const HloInstruction* const> touched) {
  return Verifier(module, HloVerifierOptions()).RunTouched(touched, /*search_cycles=*/true);
}

absl::Status VerifyHloInstructions(const HloModule& module,
                                  absl::Span<const HloInstruction* const> touched,
                                  bool search_cycles) {
  return Verifier(module, HloVerifierOptions()).RunTouched(touched, search_cycles);
}

std::optional<VerifierLocation> GetVerifierLocation(const absl::Status& status) {
  const auto payload = status.GetPayload(kLocationPayload);
  if (!payload.has_value()) return std::nullopt;
  std::pair<std::string, std::string> names = absl::StrSplit(std::string(*payload), absl::MaxSplits('\n', 1));
  return VerifierLocation{std::move(names.first), std::move(names.second)};
}

}  // namespace hilo
