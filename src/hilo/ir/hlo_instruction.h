// HloInstruction: one node of an HLO computation.
//
// An instruction has a name, an opcode, a shape, ordered operands and the
// set of its users (kept consistent with the operands by every mutator),
// control predecessors/successors, the computations it calls, and
// attributes. Attributes that passes, the verifier or the evaluator read are
// typed fields; every other attribute is kept verbatim (name and value text)
// so that printing a parsed module loses nothing. `attribute_order()`
// remembers the order attributes were written in so the printer can write
// them back the same way.
#ifndef HILO_IR_HLO_INSTRUCTION_H_
#define HILO_IR_HLO_INSTRUCTION_H_

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "hilo/ir/attribute_names.h"
#include "hilo/ir/compact_string.h"
#include "hilo/ir/hlo_opcode.h"
#include "hilo/ir/instruction_arena.h"
#include "hilo/ir/instruction_name.h"
#include "hilo/ir/order_and_metadata.h"
#include "hilo/ir/pointer_list.h"
#include "hilo/ir/replica_groups.h"
#include "hilo/ir/shape.h"
#include "hilo/ir/shared_shape.h"

namespace hilo {

class HloComputation;
class HloModule;

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;

  bool operator==(const DotDimensionNumbers&) const = default;
};

// `frontend_attributes={k1="v1",k2="v2"}`: an ordered key -> value map.
// Values are stored unescaped.
class FrontendAttributes {
 public:
  // Room for two entries inline: the generated and real modules' collectives
  // carry one (collective_type) and the stream-id injector adds a second, so
  // neither the parser nor the stamping allocates (and the injector frees no
  // one-entry block per collective). 136 bytes in the group's own block.
  using Entries = absl::InlinedVector<std::pair<std::string, std::string>, 2>;

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const Entries& entries() const { return entries_; }

  // The value of `key`, or nullptr.
  const std::string* Find(absl::string_view key) const;
  bool Contains(absl::string_view key) const { return Find(key) != nullptr; }
  // Overwrites an existing key in place; otherwise inserts the key keeping
  // the entries sorted by key if they were sorted (as XLA prints them), or
  // appends it.
  void Set(absl::string_view key, absl::string_view value);
  // Appends an entry at the end (overwriting in place if the key exists):
  // the parser's way of keeping the written order.
  void Append(absl::string_view key, absl::string_view value);
  bool Remove(absl::string_view key);

  bool operator==(const FrontendAttributes&) const = default;

 private:
  Entries entries_;
};

// A computation-valued attribute (`to_apply=%add`, `branch_computations={%a, %b}`).
// Its computations: almost always one (a call's `to_apply`, a reduce's),
// kept inline.
using CalledComputationList = absl::InlinedVector<HloComputation*, 1>;
struct CalledComputationAttribute {
  AttributeName name;  // to_apply, condition, body, calls, ... (interned)
  CalledComputationList computations;
  bool braced = false;  // written as `{...}` (a list) rather than a single name
};
// A call's `to_apply` is one of these per call (64 bytes and a vector of its
// own with a std::string name and a std::vector of computations).
static_assert(sizeof(void*) != 8 || sizeof(CalledComputationAttribute) <= 40,
              "CalledComputationAttribute grew");
// An instruction's called-computation attributes when it has more than a
// call's one (HloInstruction::CommonGroup): almost always one or two, kept
// inline in the list's block.
using CalledAttributeList = absl::InlinedVector<CalledComputationAttribute, 1>;

// One called-computation attribute as a reader sees it: its computations
// are a view of the instruction's own storage (a list's block, or the
// instruction itself for a call's one computation), valid until the
// instruction's called computations or other common attributes change.
struct CalledAttributeView {
  AttributeName name;
  absl::Span<HloComputation* const> computations;
  bool braced = false;
};

// An instruction's called-computation attributes, in the order set: a view
// (two words and a name) over either a stored list or the one computation a
// call, a reduce or a fusion keeps inside the instruction
// (HloInstruction::CommonGroup). Valid as a CalledAttributeView is.
class CalledAttributes {
 public:
  class const_iterator;
  using value_type = CalledAttributeView;
  using iterator = const_iterator;
  using size_type = size_t;

  CalledAttributes() = default;
  explicit CalledAttributes(const CalledAttributeList* list) : list_(list) {}
  // The one attribute `name` of the one computation at `one`.
  CalledAttributes(AttributeName name, HloComputation* const* one) : one_(one), name_(name) {}

  size_t size() const { return list_ != nullptr ? list_->size() : (one_ != nullptr ? 1 : 0); }
  bool empty() const { return size() == 0; }
  CalledAttributeView operator[](size_t i) const {
    if (list_ == nullptr) return {name_, absl::Span<HloComputation* const>(one_, 1), false};
    const CalledComputationAttribute& attr = (*list_)[i];
    return {attr.name, attr.computations, attr.braced};
  }
  const_iterator begin() const;
  const_iterator end() const;

 private:
  const CalledAttributeList* list_ = nullptr;
  HloComputation* const* one_ = nullptr;
  AttributeName name_;
};

class CalledAttributes::const_iterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = CalledAttributeView;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = CalledAttributeView;

  const_iterator() = default;
  const_iterator(const CalledAttributes& all, size_t at) : all_(all), at_(at) {}
  CalledAttributeView operator*() const { return all_[at_]; }
  const_iterator& operator++() {
    ++at_;
    return *this;
  }
  const_iterator operator++(int) {
    const_iterator before = *this;
    ++at_;
    return before;
  }
  bool operator==(const const_iterator& other) const { return at_ == other.at_; }

 private:
  CalledAttributes all_;
  size_t at_ = 0;
};
inline CalledAttributes::const_iterator CalledAttributes::begin() const {
  return const_iterator(*this, 0);
}
inline CalledAttributes::const_iterator CalledAttributes::end() const {
  return const_iterator(*this, size());
}

// An attribute this project does not interpret, kept verbatim.
struct RawAttribute {
  std::string name;
  std::string value;  // exact text after `name=`
};

class HloInstruction {
 public:
  // Creates a detached instruction (not in any computation). Operands get
  // this instruction as a user.
  static std::unique_ptr<HloInstruction> Create(HloOpcode opcode, Shape shape,
                                                absl::Span<HloInstruction* const> operands = {},
                                                absl::string_view name = "");
  // With a shape shared with other instructions (shared_shape.h).
  static std::unique_ptr<HloInstruction> Create(HloOpcode opcode, SharedShape shape,
                                                absl::Span<HloInstruction* const> operands = {},
                                                absl::string_view name = "");
  // As Create, in `arena`'s memory: for an instruction of the module that
  // owns the arena (instruction_arena.h). Deleting it works as for any
  // other instruction. A name too long to keep inline goes to the arena
  // too (instruction_name.h).
  static std::unique_ptr<HloInstruction> CreateInArena(InstructionArena& arena, HloOpcode opcode,
                                                       SharedShape shape, absl::string_view name);
  static std::unique_ptr<HloInstruction> CreateParameter(int64_t number, Shape shape,
                                                         absl::string_view name = "");
  static std::unique_ptr<HloInstruction> CreateReshape(Shape shape, HloInstruction* operand);
  static std::unique_ptr<HloInstruction> CreateGetTupleElement(Shape shape,
                                                               HloInstruction* operand,
                                                               int64_t index);
  static std::unique_ptr<HloInstruction> CreateCustomCall(
      Shape shape, absl::Span<HloInstruction* const> operands, std::string target,
      std::string backend_config = "");
  // With a shape shared with other instructions (e.g. the one it replaces).
  static std::unique_ptr<HloInstruction> CreateCustomCall(
      SharedShape shape, absl::Span<HloInstruction* const> operands, std::string target,
      std::string backend_config = "");

  ~HloInstruction();
  // `delete` runs the destructor and gives the memory back to the heap, or
  // leaves it to the arena the instruction was made in.
  static void operator delete(HloInstruction* inst, std::destroying_delete_t);
  HloInstruction(const HloInstruction&) = delete;
  HloInstruction& operator=(const HloInstruction&) = delete;

  // --- Identity -----------------------------------------------------------
  // 16 bytes in the instruction (instruction_name.h); not NUL-terminated.
  absl::string_view name() const { return name_.view(); }
  // Only while the module is being loaded (the parser): the module's name
  // index, once built, refers to its instructions' names in place.
  void SetNameUnchecked(absl::string_view name) { name_.Assign(name); }
  HloOpcode opcode() const { return opcode_; }
  const Shape& shape() const { return shape_.get(); }
  // The shape is shared with other instructions that have the same one;
  // changing it through mutable_shape() copies it first (shared_shape.h).
  Shape* mutable_shape() { return shape_.Mutable(); }
  const SharedShape& shared_shape() const { return shape_; }
  void set_shape(SharedShape shape) { shape_ = std::move(shape); }
  HloComputation* parent() const { return parent_; }
  // Its position in its computation's list (HloComputation::instruction_slots),
  // -1 outside one.
  int32_t index_in_parent() const { return index_in_parent_; }
  // Unique id within the module, assigned when added to a computation.
  int64_t unique_id() const { return unique_id_; }

  // --- Operands and users -----------------------------------------------
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  const HloInstruction* operand(int64_t i) const { return operands_[i]; }
  HloInstruction* mutable_operand(int64_t i) { return operands_[i]; }
  // Most instructions have one or two operands and at most one user: the
  // operands keep two entries inline in 16 bytes, the users one in 8
  // (pointer_list.h), which saves an allocation per list of a parsed
  // module.
  using InstructionList = PointerList<HloInstruction>;
  using UserList = SmallPointerList<HloInstruction>;
  const InstructionList& operands() const { return operands_; }
  void AppendOperand(HloInstruction* operand);
  void ReserveOperands(size_t n) { operands_.reserve(n); }
  // Replaces operand i; keeps users consistent.
  void ReplaceOperandWith(int64_t i, HloInstruction* new_operand);
  // Replaces every occurrence of `old_operand` among the operands.
  void ReplaceOperandWithAll(HloInstruction* old_operand, HloInstruction* new_operand);
  // Drops every operand (and this instruction from their users).
  void DetachFromOperands();

  // Users in the order they were added; each user once.
  const UserList& users() const { return users_; }
  int64_t user_count() const { return static_cast<int64_t>(users_.size()); }
  bool IsUserOf(const HloInstruction* operand) const;

  // Makes every user of this instruction use `replacement` instead, and
  // makes `replacement` the root if this was the root of its computation.
  // Shapes must be compatible.
  absl::Status ReplaceAllUsesWith(HloInstruction* replacement);
  // As ReplaceAllUsesWith, without the shape check.
  void ReplaceAllUsesWithDifferentShape(HloInstruction* replacement);

  // --- Control dependencies ----------------------------------------------
  const std::vector<HloInstruction*>& control_predecessors() const {
    return rare().control_predecessors;
  }
  const std::vector<HloInstruction*>& control_successors() const {
    return rare().control_successors;
  }
  // Adds `this -> successor` (successor runs after this). No-op if present.
  void AddControlDependencyTo(HloInstruction* successor);
  void RemoveControlDependencyTo(HloInstruction* successor);
  void DropAllControlDependencies();

  // --- Called computations -------------------------------------------------
  // A view (CalledAttributes): it and the spans it gives hold until the
  // called computations, the dimensions or the raw attributes change.
  CalledAttributes called_computation_attributes() const {
    const CommonGroup& common = common_group();
    if (const CalledAttributeList* list = common.list(); list != nullptr) {
      return CalledAttributes(list);
    }
    if (!common.is_inline()) return CalledAttributes();
    return CalledAttributes(InlineCalledName(opcode_), common.inline_computation());
  }
  // Every called computation, in attribute order.
  std::vector<HloComputation*> called_computations() const;
  // The computations of attribute `name`, or an empty span.
  absl::Span<HloComputation* const> called_computations(absl::string_view name) const;
  // The single computation of attribute `name`, or nullptr.
  HloComputation* called_computation(absl::string_view name) const;
  HloComputation* to_apply() const { return called_computation("to_apply"); }
  HloComputation* while_condition() const { return called_computation("condition"); }
  HloComputation* while_body() const { return called_computation("body"); }
  // Sets (or adds) attribute `name` to the given computations.
  // (A span: the parser's list costs it no heap block.)
  void SetCalledComputations(absl::string_view name,
                             absl::Span<HloComputation* const> computations, bool braced = false);
  // Appends attribute `name` (even if one of that name exists: a reader
  // keeping what its input says).
  void AddCalledComputations(absl::string_view name,
                             absl::Span<HloComputation* const> computations, bool braced = false);
  // Removes every called-computation attribute.
  void ClearCalledComputations();
  // The name a single called computation has when the instruction keeps it
  // inline: `calls` for a fusion and an async-start, else `to_apply`
  // (what XLA's printer writes for one computation of that opcode).
  static AttributeName InlineCalledName(HloOpcode opcode);
  // Where the called list is stored (its block, in the arena or on the
  // heap), or nullptr when there is none or the one computation is inline:
  // for tests of the layout.
  const void* called_list_block() const { return common_group().list(); }

  // --- Typed attributes ----------------------------------------------------
  // parameter(N)
  // (-1 for any other opcode.) Both numbers are kept in 32 bits: a reader
  // of a number outside IndexFits() rejects it (the parser and the proto
  // reader say so); the setters keep the low 32 bits.
  int64_t parameter_number() const { return opcode_ == HloOpcode::kParameter ? index_ : -1; }
  void set_parameter_number(int64_t n) { index_ = static_cast<int32_t>(n); }
  // get-tuple-element `index=N` (-1 for any other opcode).
  int64_t tuple_index() const { return opcode_ == HloOpcode::kGetTupleElement ? index_ : -1; }
  void set_tuple_index(int64_t i) { index_ = static_cast<int32_t>(i); }
  // Whether `n` can be a parameter number or tuple index (fits in 32 bits).
  static constexpr bool IndexFits(int64_t n) { return n >= INT32_MIN && n <= INT32_MAX; }
  // `dimensions={...}` (broadcast, transpose, reduce, all-gather, ...).
  const std::optional<std::vector<int64_t>>& dimensions() const { return common().dimensions; }
  void set_dimensions(std::vector<int64_t> dims) {
    common_group().MutableGroup(*this).dimensions = std::move(dims);
  }
  // all-gather / reduce-scatter / all-to-all: dimensions()[0], or -1.
  int64_t collective_dimension() const;
  // dot: lhs_batch_dims=..., lhs_contracting_dims=...
  const DotDimensionNumbers& dot_dimension_numbers() const { return Group(&Uncommon::dot); }
  DotDimensionNumbers* mutable_dot_dimension_numbers() { return &MutableGroup(&Uncommon::dot); }
  // `replica_groups=`; nullopt when the attribute is absent.
  const std::optional<ReplicaGroups>& replica_groups() const {
    return collective().replica_groups;
  }
  void set_replica_groups(std::optional<ReplicaGroups> groups) {
    mutable_collective().replica_groups = std::move(groups);
  }
  // `channel_id=N`
  const std::optional<int64_t>& channel_id() const { return collective().channel_id; }
  void set_channel_id(std::optional<int64_t> id) { mutable_collective().channel_id = id; }
  // `use_global_device_ids=true`; nullopt when absent.
  const std::optional<bool>& use_global_device_ids() const {
    return collective().use_global_device_ids;
  }
  void set_use_global_device_ids(std::optional<bool> v) {
    mutable_collective().use_global_device_ids = v;
  }
  // `constrain_layout=true`; nullopt when absent.
  const std::optional<bool>& constrain_layout() const {
    return collective().constrain_layout;
  }
  void set_constrain_layout(std::optional<bool> v) { mutable_collective().constrain_layout = v; }
  // `source_target_pairs={{0,1},{1,2}}`
  const std::optional<std::vector<std::pair<int64_t, int64_t>>>& source_target_pairs() const {
    return collective().source_target_pairs.get();
  }
  void set_source_target_pairs(std::optional<std::vector<std::pair<int64_t, int64_t>>> p) {
    mutable_collective().source_target_pairs.set(std::move(p));
  }
  // custom-call `custom_call_target="..."`
  const std::string& custom_call_target() const { return rare().custom_call_target; }
  void set_custom_call_target(std::string target) {
    mutable_rare().custom_call_target = std::move(target);
  }
  // custom-call `api_version=`: 1 (API_VERSION_ORIGINAL, XLA's default,
  // which its printer omits), 2 STATUS_RETURNING, 3 STATUS_RETURNING_UNIFIED,
  // 4 TYPED_FFI.
  int api_version() const { return rare().api_version; }
  void set_api_version(int v) { mutable_rare().api_version = v; }
  static absl::string_view ApiVersionName(int v);
  static std::optional<int> ApiVersionFromName(absl::string_view name);
  // `backend_config=`: the unescaped string value, or, when written as a
  // `{...}` dictionary, its text verbatim (backend_config_is_dict()).
  const std::optional<std::string>& backend_config() const { return rare().backend_config; }
  bool backend_config_is_dict() const { return rare().backend_config_is_dict; }
  void set_backend_config(std::optional<std::string> config, bool is_dict = false) {
    Rare& r = mutable_rare();
    r.backend_config = std::move(config);
    r.backend_config_is_dict = is_dict;
  }
  // (In the uncommon group: most instructions have none.)
  const FrontendAttributes& frontend_attributes() const { return Group(&Uncommon::frontend); }
  FrontendAttributes* mutable_frontend_attributes() { return &MutableGroup(&Uncommon::frontend); }
  void set_frontend_attributes(FrontendAttributes fa) {
    MutableGroup(&Uncommon::frontend) = std::move(fa);
  }
  // `metadata={...}`: the text between the braces, verbatim; empty if absent.
  absl::string_view metadata() const { return order_and_metadata_.metadata(); }
  // While the module is loaded, the text goes to its arena (as a group
  // does, GroupArena()).
  void set_metadata(absl::string_view m);
  // `sharding=...`: the value text verbatim; empty if absent.
  const std::string& sharding() const { return rare().sharding; }
  void set_sharding(std::string s) { mutable_rare().sharding = std::move(s); }
  // constant(...): the literal text between the parentheses, verbatim
  // ("{...}" when elided).
  const std::string& literal_text() const { return rare().literal_text; }
  void set_literal_text(std::string t) { mutable_rare().literal_text = std::move(t); }

  // Attributes that are not typed, in the order written.
  const std::vector<RawAttribute>& raw_attributes() const { return common().raw; }
  std::vector<RawAttribute>* mutable_raw_attributes() { return &common_group().MutableGroup(*this).raw; }
  // The verbatim value of raw attribute `name`, or nullptr.
  const std::string* raw_attribute(absl::string_view name) const;
  void SetRawAttribute(absl::string_view name, std::string value);
  bool RemoveRawAttribute(absl::string_view name);

  // Names of all attributes (typed, called-computation and raw) in the order
  // they were written. The printer prints in this order and then any set
  // attribute not listed here in XLA's order.
  // The reference holds until the metadata is set or removed (the order
  // moves between the instruction and the metadata's block,
  // order_and_metadata.h): keep a copy (one word) across set_metadata.
  const AttributeOrder& attribute_order() const { return order_and_metadata_.order(); }
  // Appends `name` (interned here, so any string may be passed).
  void AppendAttributeName(absl::string_view name) { order_and_metadata_.mutable_order()->Append(name); }
  // For removing names.
  AttributeOrder* mutable_attribute_order() { return order_and_metadata_.mutable_order(); }

  // Which out-of-line groups of attributes the instruction has (the bits
  // below); every attribute of a group it does not have is at its default.
  // Lets a reader of every attribute (the printer) skip what most
  // instructions lack in one test instead of one per attribute.
  // channel_id, replica_groups, use_global_device_ids, constrain_layout,
  // source_target_pairs:
  static constexpr uint32_t kCollectiveGroup = 1;
  static constexpr uint32_t kDotGroup = 2;       // dot_dimension_numbers
  static constexpr uint32_t kFrontendGroup = 4;  // frontend_attributes
  // control dependencies, custom_call_target, api_version, backend_config,
  // sharding, literal_text, opaque_proto_fields:
  static constexpr uint32_t kRareGroup = 8;
  uint32_t attribute_groups() const {
    if (lacks_uncommon()) return 0;
    const Uncommon* uncommon = uncommon_block();
    return (uncommon->collective != nullptr ? kCollectiveGroup : 0u) |
           (uncommon->dot != nullptr ? kDotGroup : 0u) |
           (uncommon->frontend != nullptr ? kFrontendGroup : 0u) |
           (uncommon->rare != nullptr ? kRareGroup : 0u);
  }
  // Whether a loaded instruction's groups go to its module's arena
  // (GroupArena(); HILO_ARENA_GROUPS=0 keeps them on the heap). Read once.
  static bool ArenaGroupsEnabled();
  // Whether a loaded instruction's users' blocks of up to
  // SmallPointerList's kArenaCapacity go there too (HILO_ARENA_USERS=0
  // keeps them on the heap). Read once.
  static bool ArenaUsersEnabled();

  // Fields of the XLA proto this instruction was read from that hilo does
  // not model, serialized (an HloInstructionProto holding only them); empty
  // when there are none. Owned by hilo/proto, written back unchanged.
  const std::string& opaque_proto_fields() const { return rare().opaque_proto_fields; }
  void set_opaque_proto_fields(std::string bytes) {
    if (!bytes.empty() || rare_or_null() != nullptr) mutable_rare().opaque_proto_fields = std::move(bytes);
  }

  // Whether the block of uncommon attribute groups (collective, dot,
  // frontend, rare) exists (it then holds the common group's word): for
  // tests of the layout.
  bool has_uncommon_block() const { return uncommon_or_null() != nullptr; }

  // Text-format fidelity bits owned by the parser and printer (for example
  // whether operand shapes were written before operand names): the low
  // kTextFlagBits bits of a uint32_t (text_flags.h asserts that its flags
  // fit; set_text_flags drops higher bits).
  static constexpr int kTextFlagBits = 23;
  uint32_t text_flags() const { return text_flags_; }
  void set_text_flags(uint32_t flags) { text_flags_ = flags & ((1u << kTextFlagBits) - 1); }

  // Takes metadata and frontend attributes from `removed` where this
  // instruction has none (what XLA does when replacing an instruction). They
  // move, not copy (a heap block each): `removed` is dead, and loses them.
  void TakeMetadataIfAbsent(HloInstruction& removed);

  // True for the ops that carry replica groups and are
  // HloCollectiveInstruction subclasses in XLA (all-gather, all-gather-start,
  // all-reduce, all-reduce-start, all-to-all, collective-broadcast,
  // ragged-all-to-all, reduce-scatter).
  bool IsCollectiveWithReplicaGroups() const { return IsCollectiveWithReplicaGroups(opcode_); }
  static bool IsCollectiveWithReplicaGroups(HloOpcode opcode);

 private:
  friend class HloComputation;
  friend class HloModule;
  HloInstruction(HloOpcode opcode, SharedShape shape) : opcode_(opcode), shape_(std::move(shape)) {}

  void AddUser(HloInstruction* user);
  void RemoveUser(HloInstruction* user);

  // Attributes most instructions do not have live out of line, allocated on
  // first write, in groups so that an instruction pays only for the kind it
  // has (the common ones; a collective's attributes, a dot's dimensions and
  // the rest behind one more pointer). The instruction is then under a fifth of its
  // first size (952 bytes): it was most of the parser's memory and page
  // faults.
  struct CollectiveAttributes {
    std::optional<ReplicaGroups> replica_groups;
    // Only collective-permute has pairs: out of line.
    OutOfLine<std::optional<std::vector<std::pair<int64_t, int64_t>>>> source_target_pairs;
    std::optional<int64_t> channel_id;
    std::optional<bool> use_global_device_ids;
    std::optional<bool> constrain_layout;
  };
  // The attributes many instructions have, one of them or two together:
  // `dimensions={...}`, called computations (a reduce has both, a call or a
  // fusion only computations) and uninterpreted attributes (a compare's
  // `direction`, a slice's `slice`). They were in `Rare` (280 bytes: a
  // call's `to_apply` alone cost more than its instruction).
  struct CommonAttributes {
    std::optional<std::vector<int64_t>> dimensions;
    CalledAttributeList called;
    std::vector<RawAttribute> raw;
  };
  // One allocation holds a call's `to_apply` (it took three: the group,
  // the attribute list and the computation list).
  static_assert(sizeof(void*) != 8 || sizeof(CommonAttributes) <= 104,
                "CommonAttributes grew");
  // common_: one word (in the instruction, or in its Uncommon block once
  // there is one). Four forms, by its low three bits:
  // - 0 with the word null: no common attribute;
  // - 0 with the word not null: the instruction's only common attribute is
  //   one called computation, unbraced, named InlineCalledName(opcode) (a
  //   call's `to_apply`, a reduce's, a fusion's `calls`), and the word is
  //   that computation's address, read in place as a one-element span: no
  //   block at all (100,000 calls: -4.8 MB at the peak, docs/performance.md,
  //   "twenty-fourth session"; HILO_CALLED_INLINE=0 stores it in a list);
  // - kListAlone: the only common attributes are called computations, and
  //   the word points to their list: a 48-byte block where the group takes
  //   104 ("seventeenth session"; the group for every instruction with
  //   HILO_CALLED_LIST_ALONE=0);
  // - kGroup: the whole group.
  // kInArena, with a block: the block is in the module's arena
  // (GroupArena()). A change of form (a second attribute, dimensions, raw
  // attributes) moves what was there into the new form: as any change of an
  // instruction's attributes, that invalidates views and references into it.
  // The word is a pointer-typed object so that the inline form's span reads
  // a pointer object; every tagged form is a pointer, 8-byte aligned.
  class CommonGroup {
   public:
    CommonGroup() = default;
    CommonGroup(const CommonGroup&) = delete;
    CommonGroup& operator=(const CommonGroup&) = delete;
    ~CommonGroup() { Destroy(); }
    // The stored list (the list alone or the group's), or nullptr when there
    // is none or the one computation is inline.
    ABSL_ATTRIBUTE_ALWAYS_INLINE const CalledAttributeList* list() const {
      const uintptr_t bits = Bits();
      if ((bits & kGroup) != 0) return &reinterpret_cast<const CommonAttributes*>(bits & ~kTags)->called;
      if ((bits & kListAlone) != 0) return reinterpret_cast<const CalledAttributeList*>(bits & ~kTags);
      return nullptr;
    }
    bool is_inline() const { return word_ != nullptr && (Bits() & kTags) == 0; }
    HloComputation* const* inline_computation() const { return &word_; }
    // Every attribute at its default unless the whole group is there.
    ABSL_ATTRIBUTE_ALWAYS_INLINE const CommonAttributes& group() const {
      return (Bits() & kGroup) != 0 ? *reinterpret_cast<const CommonAttributes*>(Bits() & ~kTags)
                                     : Default<CommonAttributes>();
    }
    // nullptr unless the instruction has the whole group.
    CommonAttributes* own_group() const {
      return (Bits() & kGroup) != 0 ? reinterpret_cast<CommonAttributes*>(Bits() & ~kTags) : nullptr;
    }
    // Nothing, or one computation inline: what SetInline may replace.
    bool absent_or_inline() const { return (Bits() & kTags) == 0; }
    void SetInline(HloComputation* computation) {
      Destroy();
      word_ = computation;
    }
    // The stored list, made (with the inline computation in it) if there
    // was none. `owner`: the instruction holding this, which says where a
    // new list or group goes (GroupArena()) and names an inline computation.
    CalledAttributeList& MutableCalled(const HloInstruction& owner) {
      if (const CalledAttributeList* existing = list(); existing != nullptr) {
        return const_cast<CalledAttributeList&>(*existing);
      }
      return NewCalled(owner);
    }
    CommonAttributes& MutableGroup(const HloInstruction& owner) {
      CommonAttributes* existing = own_group();
      return existing != nullptr ? *existing : NewGroup(owner);
    }
    // No called computation; any other common attribute kept.
    void ClearCalled();

    // The instruction's own word may instead point to its Uncommon block
    // (HloInstruction::uncommon_or_null): the complement of the block's
    // address (with kInArena when the block is in the module's arena), so
    // the sign bit, which no user-space address has, tells that form in one
    // test-and-branch (as the null test of the separate pointer it
    // replaced) and two instructions decode it (docs/performance.md,
    // "twenty-fifth session", round three). The complement has kGroup set
    // (the block is 8-byte aligned), so may_hold_group() holds for it. Only
    // the instruction reads and writes that form, through these.
    ABSL_ATTRIBUTE_ALWAYS_INLINE bool holds_uncommon() const { return static_cast<intptr_t>(Bits()) < 0; }
    ABSL_ATTRIBUTE_ALWAYS_INLINE void* uncommon_block() const {
      return reinterpret_cast<void*>(~Bits() & ~kTags);
    }
    bool uncommon_in_arena() const { return (~Bits() & kInArena) != 0; }
    // False when the word is neither the whole group nor the Uncommon
    // block (common()'s one test).
    ABSL_ATTRIBUTE_ALWAYS_INLINE bool may_hold_group() const { return (Bits() & kGroup) != 0; }
    // Gives this word's form to `fresh` (absent until now): the group, list
    // or inline computation is now fresh's, and this word still holds it
    // until Publish replaces it.
    void CopyTo(CommonGroup& fresh) const { fresh.word_ = word_; }
    // This word becomes the Uncommon block `block`, which holds the group
    // this word held (CopyTo).
    void PublishUncommon(void* block, bool in_arena) {
      const uintptr_t address = reinterpret_cast<uintptr_t>(block);
      assert(static_cast<intptr_t>(address) >= 0 && (address & kTags) == 0);
      SetBits(~(address | (in_arena ? kInArena : 0)));
    }
    // Forgets the Uncommon block (its owner destroys it).
    void ForgetUncommon() { word_ = nullptr; }

   private:
    uintptr_t Bits() const { return reinterpret_cast<uintptr_t>(word_); }
    void SetBits(uintptr_t bits) { word_ = reinterpret_cast<HloComputation*>(bits); }
    // The inline computation as its attribute (is_inline()).
    CalledComputationAttribute InlineAttribute(const HloInstruction& owner) const;
    // On the heap, or in the owner's GroupArena().
    CalledAttributeList& NewCalled(const HloInstruction& owner);
    // The group, with the list alone or the inline computation moved into
    // it if there was one.
    CommonAttributes& NewGroup(const HloInstruction& owner);
    // Runs the destructor of the list alone or the group, and frees it
    // unless it is in an arena; nothing for an inline computation.
    void Destroy();

    static constexpr uintptr_t kListAlone = 1;
    // The list alone or the group is in the module's arena (GroupArena()).
    static constexpr uintptr_t kInArena = 2;
    static constexpr uintptr_t kGroup = 4;
    static constexpr uintptr_t kTags = kListAlone | kInArena | kGroup;
    HloComputation* word_ = nullptr;
  };
  class UserIndex;
  // An owning pointer to an attribute group, on the heap or in the module's
  // arena (GroupArena(); bit 0 set): the group's destructor runs
  // either way, only a heap group's memory is freed. As small as
  // std::unique_ptr (8 bytes).
  template <typename T>
  class GroupPtr {
   public:
    GroupPtr() = default;
    GroupPtr(const GroupPtr&) = delete;
    GroupPtr& operator=(const GroupPtr&) = delete;
    ~GroupPtr() { reset(); }
    T* get() const { return reinterpret_cast<T*>(bits_ & ~kInArena); }
    T& operator*() const { return *get(); }
    T* operator->() const { return get(); }
    bool operator==(std::nullptr_t) const { return bits_ == 0; }
    // A new group (there was none), on the heap or, given one, in `arena`.
    T& Make(InstructionArena* arena) {
      static_assert(alignof(T) >= 2 && alignof(T) <= InstructionArena::kMaxAlignment);
      if (arena == nullptr) {
        T* group = new T();
        bits_ = reinterpret_cast<uintptr_t>(group);
        return *group;
      }
      T* group = new (arena->Allocate(sizeof(T), alignof(T))) T();
      bits_ = reinterpret_cast<uintptr_t>(group) | kInArena;
      return *group;
    }
    void reset() {
      T* group = get();
      if (group == nullptr) return;
      if ((bits_ & kInArena) != 0) {
        group->~T();
      } else {
        delete group;
      }
      bits_ = 0;
    }

   private:
    static constexpr uintptr_t kInArena = 1;
    uintptr_t bits_ = 0;
  };
  struct UserIndexDeleter {
    void operator()(UserIndex* index) const;
  };
  struct Rare {
    std::vector<HloInstruction*> control_predecessors;
    std::vector<HloInstruction*> control_successors;
    std::string custom_call_target;
    int api_version = 1;
    bool backend_config_is_dict = false;
    std::optional<std::string> backend_config;
    std::string sharding;
    std::string literal_text;
    std::string opaque_proto_fields;
    // Position of each user in users_, built once users_ grows past a few
    // entries so that adding and removing users stays O(1) for values with
    // very many users (hlo_instruction.cc).
    std::unique_ptr<UserIndex, UserIndexDeleter> user_index;
  };
  // The groups few instructions have, behind one pointer: a collective's,
  // a dot's, frontend attributes, and the rest.
  // With the common group's word (common_ holds this block instead, once it
  // exists: one word of every instruction, docs/performance.md,
  // "twenty-fifth session"; 8 bytes more only here).
  struct Uncommon {
    CommonGroup common;
    GroupPtr<CollectiveAttributes> collective;
    GroupPtr<DotDimensionNumbers> dot;
    GroupPtr<FrontendAttributes> frontend;
    GroupPtr<Rare> rare;
  };
  // The value of an absent group: every attribute at its default. A static
  // member (initialized before main, never destroyed), not a function's
  // static: the guard of one kept GCC from inlining Group<Rare> and the
  // accessors that call it (+1.1% instructions on a round trip); the
  // accessors below are forced inline for the same reason.
  template <typename T>
  union Absent {
    constexpr Absent() : value() {}
    ~Absent() {}
    T value;
  };
  // Defined in hlo_instruction.cc (one initializer, not one per file).
  static const Absent<CommonAttributes> kAbsentCommon;
  static const Absent<CollectiveAttributes> kAbsentCollective;
  static const Absent<DotDimensionNumbers> kAbsentDot;
  static const Absent<FrontendAttributes> kAbsentFrontend;
  static const Absent<Rare> kAbsentRare;
  template <typename T>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static const T& Default() {
    if constexpr (std::is_same_v<T, CommonAttributes>) {
      return kAbsentCommon.value;
    } else if constexpr (std::is_same_v<T, CollectiveAttributes>) {
      return kAbsentCollective.value;
    } else if constexpr (std::is_same_v<T, DotDimensionNumbers>) {
      return kAbsentDot.value;
    } else if constexpr (std::is_same_v<T, FrontendAttributes>) {
      return kAbsentFrontend.value;
    } else {
      static_assert(std::is_same_v<T, Rare>);
      return kAbsentRare.value;
    }
  }
  template <typename T>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static const T& OrDefault(const GroupPtr<T>& group) {
    return group != nullptr ? *group : Default<T>();
  }
  // Where a group (or metadata text) made now goes: the module's arena
  // while a loader fills the module (the arena HloModule::BeginBulkLoad
  // set for this thread, InstructionArena::Loading()) and this instruction
  // is one of the module's arena instructions (CreateInArena); else the
  // heap (nullptr). So every setter of a loader puts its group in the
  // arena, with no call of its own, and a pass's later groups go to the
  // heap. Only memory differs: setting, changing and removing attributes,
  // and deleting the instruction, work the same (an arena group's
  // destructor runs; the arena keeps its memory until the module dies).
  // HILO_ARENA_GROUPS=0 sets no loading arena (docs/performance.md,
  // "twentieth session" and "twenty-first session: groups in the arena").
  InstructionArena* GroupArena() const;
  template <typename T>
  T& Materialize(GroupPtr<T>& group) {
    return group != nullptr ? *group : group.Make(GroupArena());
  }
  template <typename T>
  ABSL_ATTRIBUTE_ALWAYS_INLINE const T& Group(GroupPtr<T> Uncommon::*group) const {
    if (lacks_uncommon()) return Default<T>();
    return OrDefault(uncommon_block()->*group);
  }
  template <typename T>
  T& MutableGroup(GroupPtr<T> Uncommon::*group) {
    return Materialize(MaterializeUncommon().*group);
  }
  // The readers below branch on holds_uncommon() before decoding, so that
  // an instruction without the block pays one test-and-branch (a select
  // between the decoded address and nullptr costs every instruction the
  // decoding: docs/performance.md, "twenty-fifth session", round three).
  ABSL_ATTRIBUTE_ALWAYS_INLINE Uncommon* uncommon_block() const {
    return static_cast<Uncommon*>(common_.uncommon_block());
  }
  // Almost every instruction lacks the block: said as a near-certain
  // branch, which GCC keeps as a branch (a select of two addresses, as an
  // unhinted `?:` of common_ and the block's group becomes, decodes the
  // word for every instruction).
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool lacks_uncommon() const {
    return __builtin_expect_with_probability(!common_.holds_uncommon(), 1, 0.999);
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE Uncommon* uncommon_or_null() const {
    if (lacks_uncommon()) return nullptr;
    return uncommon_block();
  }
  // The block (made, with the common group moved into it, if there was
  // none: NewUncommon, out of line).
  ABSL_ATTRIBUTE_ALWAYS_INLINE Uncommon& MaterializeUncommon() {
    if (common_.holds_uncommon()) return *uncommon_block();
    return NewUncommon();
  }
  ABSL_ATTRIBUTE_NOINLINE Uncommon& NewUncommon();
  // The common group: common_ itself, or the one in the Uncommon block.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const CommonGroup& common_group() const {
    if (lacks_uncommon()) return common_;
    return uncommon_block()->common;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE CommonGroup& common_group() {
    if (lacks_uncommon()) return common_;
    return uncommon_block()->common;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE const CollectiveAttributes& collective() const {
    return Group(&Uncommon::collective);
  }
  CollectiveAttributes& mutable_collective() { return MutableGroup(&Uncommon::collective); }
  ABSL_ATTRIBUTE_ALWAYS_INLINE const Rare& rare() const { return Group(&Uncommon::rare); }
  Rare& mutable_rare() { return MutableGroup(&Uncommon::rare); }
  // One test for most instructions: kGroup is in both the whole group's
  // form and the Uncommon block's tag, so a word without it has neither.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const CommonAttributes& common() const {
    if (!common_.may_hold_group()) return Default<CommonAttributes>();
    if (!lacks_uncommon()) return uncommon_block()->common.group();
    return common_.group();
  }
  Rare* rare_or_null() const {
    if (lacks_uncommon()) return nullptr;
    return uncommon_block()->rare.get();
  }
  UserIndex* FindUserIndex() const {
    Rare* rare = rare_or_null();
    return rare != nullptr ? rare->user_index.get() : nullptr;
  }

  InstructionName name_;
  HloOpcode opcode_;
  // The opcode's word holds these too (bits 8-31: a bit field of the same
  // 32-bit unit), and index_ the word's second half: 8 bytes of every
  // instruction (docs/performance.md, "fourteenth session").
  uint32_t in_arena_ : 1 = 0;  // made by CreateInArena
  uint32_t text_flags_ : kTextFlagBits = 0;
  // parameter_number() of a parameter, tuple_index() of a get-tuple-element:
  // 32 bits (the parser and the proto reader reject a larger number).
  int32_t index_ = -1;
  SharedShape shape_;
  HloComputation* parent_ = nullptr;
  // 32 bits: a module of 2^31 instructions would take hundreds of GB.
  int32_t unique_id_ = -1;
  int32_t index_in_parent_ = -1;

  InstructionList operands_;
  UserList users_;

  // The attribute order and the metadata text in one word (order_and_metadata.h).
  OrderAndMetadata order_and_metadata_;
  // The common group's word, or (CommonGroup::holds_uncommon) the Uncommon
  // block's address, complemented, and the block then holds that word: the
  // two were a word each (docs/performance.md, "twenty-fifth session").
  CommonGroup common_;
};

// An instruction of a parsed module is most of the module's memory (docs/
// performance.md, "tenth session"): it must not grow unnoticed (88 bytes
// with libstdc++ on a 64-bit target; 112 before the attribute order and the
// metadata shared a word, "twenty-third session"; 104 before the common and
// the uncommon groups shared a word and the users' list took one word,
// "twenty-fifth session").
static_assert(sizeof(void*) != 8 || sizeof(HloInstruction) <= 88,
              "HloInstruction grew: every instruction of every module pays for it");

}  // namespace hilo

#endif  // HILO_IR_HLO_INSTRUCTION_H_
