// HloModule: computations in the order written, an entry computation, and
// the module header (`HloModule name, key=value, ...`).
#ifndef HILO_IR_HLO_MODULE_H_
#define HILO_IR_HLO_MODULE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/types/span.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/instruction_arena.h"
#include "hilo/ir/instruction_name_index.h"
#include "hilo/ir/computation_name_index.h"
#include "hilo/ir/name_hash.h"

namespace hilo {

// A header attribute kept verbatim (entry_computation_layout,
// input_output_alias, is_scheduled, ...).
struct HeaderAttribute {
  std::string name;
  std::string value;  // exact text after `name=`
};

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}
  ~HloModule();
  HloModule(const HloModule&) = delete;
  HloModule& operator=(const HloModule&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // --- Header ---------------------------------------------------------------
  // replica_count / num_partitions as written in the header; nullopt when
  // absent (XLA's default is 1 for both).
  const std::optional<int64_t>& replica_count() const { return replica_count_; }
  void set_replica_count(std::optional<int64_t> n) { replica_count_ = n; }
  const std::optional<int64_t>& num_partitions() const { return num_partitions_; }
  void set_num_partitions(std::optional<int64_t> n) { num_partitions_ = n; }
  // All other header attributes, verbatim, in the order written.
  const std::vector<HeaderAttribute>& header_attributes() const { return header_attributes_; }
  std::vector<HeaderAttribute>* mutable_header_attributes() { return &header_attributes_; }
  const std::string* header_attribute(absl::string_view name) const;
  // Names of all header attributes (including replica_count and
  // num_partitions) in the order written, for the printer.
  std::vector<std::string>* mutable_header_order() { return &header_order_; }
  const std::vector<std::string>& header_order() const { return header_order_; }
  // True when the text had an `HloModule` line.
  bool has_header() const { return has_header_; }
  void set_has_header(bool v) { has_header_ = v; }

  // --- Computations ----------------------------------------------------------
  // Appends a computation (module order = order added). Its name is made
  // unique among computations.
  HloComputation* AddComputation(std::unique_ptr<HloComputation> computation,
                                 bool is_entry = false);
  // Computations in module order.
  std::vector<HloComputation*> computations() const;
  // The same, as the module holds them: no copy (the verifier's of 100,000
  // computations was 0.8 MB at the peak; docs/performance.md,
  // "twenty-third session: a smaller instruction"). Valid until a
  // computation is added or removed.
  absl::Span<const std::unique_ptr<HloComputation>> computation_slots() const { return computations_; }
  // Computations in module order, without the fusion computations (those a
  // `fusion` instruction calls with `calls=`), as XLA's
  // MakeNonfusionComputations (which walks in call-graph post order; a
  // parsed module is usually written that way). A computation a fused
  // computation calls (a reduce's to_apply) is not a fusion computation.
  std::vector<HloComputation*> MakeNonfusionComputations() const;
  // Memory for this module's instructions (the parser's; instruction_arena.h).
  InstructionArena& instruction_arena() { return instruction_arena_; }
  int64_t computation_count() const { return static_cast<int64_t>(computations_.size()); }
  HloComputation* entry_computation() const { return entry_; }
  void set_entry_computation(HloComputation* entry) { entry_ = entry; }
  HloComputation* GetComputationWithName(absl::string_view name) const;
  // Removes a computation that no instruction calls.
  void RemoveComputation(HloComputation* computation);
  int64_t instruction_count() const;

  // --- Structural changes ----------------------------------------------------
  // Together, these two say when the module's channel instructions
  // (IsChannelOpcode), listed computation by computation in module order and
  // each computation's in list order, may have changed.
  //
  // The generation changes when a computation is added or removed, a
  // channel instruction is added to one of the module's computations, or a
  // bulk load ends. Nothing else can add an instruction to that list or move
  // one in it: an added instruction goes at the end of its computation's
  // list, compaction keeps the order, an opcode never changes, and attribute
  // changes (channel_id, stream_id, ...) do not select or move an
  // instruction. Each new value is one no module of this process had before,
  // so a list kept with the value it was made at belongs to this module and
  // is current up to removals exactly while the value is the same.
  uint64_t channel_generation() const { return channel_generation_; }
  // Counts the channel instructions removed from the module's computations.
  // A removal takes one instruction out of the list and moves no other; the
  // removed instruction stays allocated, with parent() == nullptr, until its
  // computation dies (a new generation). So while the generation is the
  // same, a kept list minus its instructions that have no parent is the
  // current list (ScanCollectives, analysis/collective_predicates.h).
  uint64_t channel_removals() const { return channel_removals_; }
  void NoteChannelInstructionsChanged() { channel_generation_ = NewGeneration(); }
  void NoteChannelInstructionRemoved() { ++channel_removals_; }

  // --- Names -----------------------------------------------------------------
  // A name not used by any instruction of the module, derived from `hint`
  // (`hint`, else `hint.1`, `hint.2`, ...). The name is reserved.
  std::string UniqueInstructionName(absl::string_view hint);
  // Gives `instruction` (of this module, named "") the name
  // UniqueInstructionName(hint) would return, written in place and indexed
  // by the instruction as the parser's names are: no copy of the name, one
  // hash per candidate, and `hint` itself is looked up only until it is
  // found used (HloComputation::AddInstruction's way for a new instruction;
  // HILO_UNIQUE_NAME_COPY=1 goes through UniqueInstructionName instead,
  // the switch of this saving, measured in docs/performance.md).
  void NameInstructionUniquely(HloInstruction* instruction, absl::string_view hint);
  // Reserves `name` exactly; false if it is already used.
  bool ReserveInstructionName(absl::string_view name);
  void ReleaseInstructionName(absl::string_view name);
  bool IsInstructionNameUsed(absl::string_view name) const;
  // The instruction the module's name index holds under `name`, or nullptr
  // (the name is not there, is reserved without an instruction, or the
  // index is not built: nothing is built by asking). Whatever the index's
  // state, at most one instruction is returned for a name, so a module all
  // of whose instructions are found as themselves has no name twice: the
  // verifier's check without a name set of its own (hlo_verifier.cc).
  const HloInstruction* IndexedInstruction(absl::string_view name) const {
    return IndexedInstruction(name, HashName(name));
  }
  // As above, with `hash` = HashName(name) computed by the caller (ahead,
  // with PrefetchIndexed: the verifier's walk).
  const HloInstruction* IndexedInstruction(absl::string_view name, size_t hash) const {
    if (!name_index_built_) return nullptr;
    return instruction_names_.Find(name, hash);
  }
  // Brings the index's slot for a name of hash `hash` into cache.
  void PrefetchIndexed(size_t hash) const { instruction_names_.Prefetch(hash); }

  // Bulk loading (the parser): between Begin and End, instructions added to
  // the module's computations keep their names unchecked, and the caller
  // guarantees that they are unique and non-empty. The set of used names is
  // then built only when something first asks for a name (a pass creating
  // an instruction), so parsing and printing a module never builds it.
  void BeginBulkLoad();
  // Meanwhile the attribute groups of the module's arena instructions go to
  // its arena (InstructionArena::Loading, HloInstruction::GroupArena): the
  // caller loads on one thread. End also gives back the arena's unused
  // pages (InstructionArena::ReleaseUnused).
  void EndBulkLoad();
  // As above, with the loader's set of every instruction it added (the
  // parser's): it becomes the name index, so the first new instruction
  // costs no hashing of all names (74 M instructions on the 374k-instruction
  // generated module). HILO_NAME_INDEX_REBUILD=1 drops it instead (the
  // index is then built on demand, as before; measured in
  // docs/performance.md).
  void EndBulkLoad(InstructionNameSet names);
  bool bulk_loading() const { return bulk_loading_; }

  int64_t NextUniqueId() { return next_unique_id_++; }

  // Fields of the XLA proto this module was read from that hilo does not
  // model, serialized; empty when none (owned by hilo/proto).
  const std::string& opaque_proto_fields() const { return opaque_proto_fields_; }
  void set_opaque_proto_fields(std::string bytes) { opaque_proto_fields_ = std::move(bytes); }

  // Text-format fidelity state owned by the parser and printer (the
  // stack-frame index section verbatim, the print style of the input).
  // Opaque to everything else.
  struct TextInfo {
    std::string stack_frames;  // `FileNames ... StackFrames ...` verbatim; empty if absent
    uint32_t flags = 0;
  };
  const TextInfo& text_info() const { return text_info_; }
  TextInfo* mutable_text_info() { return &text_info_; }

 private:
  // First: destroyed after the computations, whose instructions may be in it.
  InstructionArena instruction_arena_;
  std::string name_;
  std::optional<int64_t> replica_count_;
  std::optional<int64_t> num_partitions_;
  std::vector<HeaderAttribute> header_attributes_;
  std::vector<std::string> header_order_;
  bool has_header_ = true;

  std::vector<std::unique_ptr<HloComputation>> computations_;
  HloComputation* entry_ = nullptr;
  // Found by their own names: a slot is a position in computations_ in 4
  // bytes (computation_name_index.h).
  ComputationNameIndex computations_by_name_;

  // Built on demand (EnsureNameIndex) from the instructions' names. It
  // refers to the names where they are: an instruction keeps its name and
  // its address until its computation dies (a removed one stays allocated;
  // RemoveComputation moves the names of the ones that die), so
  // building the index copies no string (on the 374k-instruction generated
  // module that was most of the first new instruction's cost). A name
  // reserved by ReserveInstructionName or UniqueInstructionName is kept in
  // reserved_names_, since the caller's string may move.
  void EnsureNameIndex() const;
  // Records `name` as used, in storage of the module's own; false if it was.
  bool InsertOwnedName(absl::string_view name);
  // Before `computation` dies: its names move into reserved_names_.
  void KeepNamesOf(const HloComputation& computation);
  bool IsNameInIndex(absl::string_view name) const {
    return used_names_.contains(name) || instruction_names_.contains(name);
  }
  mutable absl::flat_hash_set<absl::string_view> used_names_;
  // The bulk loader's instructions by name (EndBulkLoad); names are in the
  // index when in either set.
  InstructionNameSet instruction_names_;
  std::deque<std::string> reserved_names_;
  mutable bool name_index_built_ = true;
  bool bulk_loading_ = false;
  // Per hint: the last suffix given (`hint.N`), and whether `hint` itself
  // was found used (until ReleaseInstructionName frees it). The suffix is
  // kept as its decimal text too, which Advance steps: a pass naming
  // thousands of instructions after one hint increments the text instead of
  // writing each number anew.
  struct NameSuffix {
    int64_t next = 0;
    bool hint_used = false;
    uint8_t digits_size = 1;
    char digits[20] = {'0'};  // `next` in decimal (int64_t has at most 19 digits)
    absl::string_view Advance();
  };
  NameSuffix& SuffixOfUsedHint(absl::string_view hint);
  // The entry of `hint` in next_suffix_, or nullptr: through the last two
  // hints looked up first, as a pass names its new instructions after one
  // or two opcodes in turn (HILO_FAST_NAMING=0: always the map;
  // docs/performance.md, "naming after a hint").
  NameSuffix* FindSuffix(absl::string_view hint);
  // Nodes do not move (a cached entry stays valid), and none is erased.
  absl::node_hash_map<std::string, NameSuffix> next_suffix_;
  struct CachedHint {
    const std::string* hint = nullptr;
    NameSuffix* suffix = nullptr;
  };
  CachedHint hint_cache_[2];
  uint8_t hint_cache_victim_ = 0;
  int64_t next_unique_id_ = 0;
  std::string opaque_proto_fields_;
  TextInfo text_info_;
  // A value drawn from a process-wide counter (channel_generation()).
  static uint64_t NewGeneration();
  uint64_t channel_generation_ = NewGeneration();
  uint64_t channel_removals_ = 0;
};

}  // namespace hilo

#endif  // HILO_IR_HLO_MODULE_H_
