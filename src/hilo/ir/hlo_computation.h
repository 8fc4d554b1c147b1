// HloComputation: an ordered list of instructions with parameters and a root.
//
// Instructions are kept in the order they were written or added; the
// computation owns them. Post order is computed iteratively (an explicit
// stack), so arbitrarily deep operand chains can not overflow the stack.
#ifndef HILO_IR_HLO_COMPUTATION_H_
#define HILO_IR_HLO_COMPUTATION_H_

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "hilo/ir/compact_string.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/instruction_arena.h"
#include "hilo/ir/instruction_name.h"
#include "hilo/ir/pointer_list.h"

namespace hilo {

class HloModule;

class HloComputation {
 public:
  explicit HloComputation(absl::string_view name) { name_.Assign(name); }
  // As `new HloComputation(name)`, in `arena`'s memory, a long name too: a
  // computation of the module that owns the arena (the parser's and the
  // proto reader's; no malloc header, 16 of a small computation's bytes).
  static std::unique_ptr<HloComputation> CreateInArena(InstructionArena& arena,
                                                       absl::string_view name);
  ~HloComputation();
  // `delete` runs the destructor and gives the memory back to the heap, or
  // leaves it to the arena the computation was made in.
  static void operator delete(HloComputation* computation, std::destroying_delete_t);
  HloComputation(const HloComputation&) = delete;
  HloComputation& operator=(const HloComputation&) = delete;

  // 16 bytes in the computation (instruction_name.h); not NUL-terminated.
  absl::string_view name() const { return name_.view(); }
  HloModule* parent() const {
    const uintptr_t bits = module_or_extra_;
    return (bits & kExtraBit) != 0 ? reinterpret_cast<const Extra*>(bits & ~kExtraBit)->module
                                   : reinterpret_cast<HloModule*>(bits);
  }
  bool IsEntryComputation() const;

  // Adds `instruction` at the end of the instruction list and returns it.
  // Its name is made unique in the module (an empty name gets one derived
  // from the opcode). A parameter is also registered by its number.
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instruction);
  // Room in the list for `n` instructions in all (a loader that knows how
  // many it will add: no list grown by doubling).
  void ReserveInstructions(int64_t n) { instructions_.reserve(static_cast<size_t>(n)); }

  // Instructions in list order (as written, then as added).
  std::vector<HloInstruction*> instructions() const;
  // Appends instructions() to `out`, without a vector of its own (for a
  // caller that walks every computation of a large module).
  void AppendInstructionsTo(std::vector<HloInstruction*>* out) const;
  // Calls `visit` on each instruction in list order, without a vector (the
  // proto writer: 2.4 MB of the 300k module's write peak).
  void ForEachInstruction(absl::FunctionRef<void(HloInstruction*)> visit) const;
  int64_t instruction_count() const { return LiveCount(); }
  // The list as stored, without a copy: list order, with a null hole for
  // each removed instruction not yet compacted away.
  absl::Span<HloInstruction* const> instruction_slots() const { return instructions_; }

  // Parameters by number; a number with no parameter yields nullptr.
  // Up to two are kept in the computation itself (most small computations
  // have one or two: a reduce's or a call's `add`), in 16 bytes
  // (pointer_list.h; absl::InlinedVector took 24: docs/performance.md,
  // "twenty-fifth session"). A hole (a number without a parameter) puts
  // the list on the heap (PointerList::MoveToHeapForNulls).
  using ParameterList = PointerList<HloInstruction>;
  const ParameterList& parameter_instructions() const { return parameters_; }
  HloInstruction* parameter_instruction(int64_t number) const;
  int64_t num_parameters() const { return static_cast<int64_t>(parameters_.size()); }

  HloInstruction* root_instruction() const { return root_; }
  void set_root_instruction(HloInstruction* root) { root_ = root; }

  // Operands before users, control predecessors before successors, every
  // instruction of the computation once (unreachable ones included, in list
  // order of their first visit). Computed iteratively. If the graph has a
  // cycle the instructions on it are still each visited once.
  std::vector<HloInstruction*> MakeInstructionPostOrder() const;
  // Visits instructions in exactly MakeInstructionPostOrder()'s order until
  // `visit` returns true (stop), without building the whole order first.
  void WalkPostOrderUntil(absl::FunctionRef<bool(HloInstruction*)> visit) const;
  // Whether each of `chain` (instructions of this computation, in list
  // order) depends on the one before it, through operands and control
  // predecessors, in an acyclic computation: then every post order, the
  // walk's included, lists them in this order, and a caller that only
  // needs their order can read them in list order instead of walking.
  // False when that is not shown so (the caller walks). Each search is
  // bounded to the instructions listed between the two, so the searches
  // together read each instruction at most once.
  bool IsDependencyChain(absl::Span<HloInstruction* const> chain) const;

  // An edge that closes a cycle through operands and control predecessors:
  // `to` is an operand (or, if `control`, a control predecessor) of `from`
  // and `to` is already on the path that reached `from`. nullopt if the
  // computation is acyclic. Edges to other computations' instructions
  // (malformed input) are ignored. Iterative, with dense state.
  //
  // An acyclic computation is usually recognised without the depth-first
  // walk: a cycle has to climb somewhere, i.e. use an edge from an
  // instruction to one with a larger unique id (an "up-edge"); one sweep
  // finds them, and for each up-edge U -> N a search from N bounded to ids
  // >= U's looks for U (a cycle's smallest id is the source of one of its
  // up-edges, so the search for that one follows the whole cycle). A parsed
  // module whose operands are written before their users has no up-edge; a
  // pass's rewrite adds a few, whose searches stay near the new
  // instructions. When the searches together would visit more than the
  // computation has (so the whole stays linear), and whenever a cycle is
  // found, the walk gives the answer, so the edge reported is always the
  // walk's. HILO_CYCLE_SEARCH_WALK=1 always walks (the switch of this
  // saving, measured in docs/performance.md).
  struct CycleEdge {
    const HloInstruction* from;
    const HloInstruction* to;
    bool control;
  };
  //
  // The sweep is skipped when the computation knows its up-edges: a sweep
  // that finds none starts a log, and from then on every edge added (by
  // HloInstruction::AddUser, AddControlDependencyTo or AddInstruction) that
  // climbs is logged, so that the log holds every up-edge (and some that are
  // gone since, which FindCycle skips). A pass that adds a few up-edges to a
  // large computation is then checked without reading the rest of it. A log
  // that grows past the computation's size is dropped (the sweep again).
  // HILO_UP_EDGE_LOG=0 never starts one (the switch of this saving).
  std::optional<CycleEdge> FindCycle() const;
  // FindCycle's depth-first walk of the whole computation.
  std::optional<CycleEdge> FindCycleByWalk() const;
  // For a verifier that found no up-edge here (every operand and control
  // predecessor has a smaller unique id): starts the log as a sweep that
  // finds none does.
  void NoteNoUpEdges() const;
  // Whether FindCycle reads the log instead of sweeping (for tests).
  bool up_edges_logged() const { return up_edges_logged_; }
  // A new edge `user` -> `dep` (dep is an operand or a control predecessor
  // of user): logged when it is an up-edge of this computation and the log
  // is kept (see FindCycle).
  void NoteNewEdge(const HloInstruction* user, const HloInstruction* dep) {
    if (up_edges_logged_) LogIfUpEdge(user, dep);
  }

  // Removes an instruction that has no users and is not the root. Its
  // operands lose it as a user; its control dependencies are dropped.
  // Its control predecessors become control predecessors of its control
  // successors, so the ordering they imposed is kept. The instruction object
  // stays allocated, with parent() == nullptr, until the computation dies.
  absl::Status RemoveInstruction(HloInstruction* instruction);
  // True for instructions DCE must keep even when unused: parameters,
  // send/recv and their done ops, infeed/outfeed, rng ops, and custom-calls
  // marked custom_call_has_side_effect=true.
  static bool HasSideEffect(const HloInstruction* instruction);
  // Removes `instruction` and then, transitively, every operand left
  // without users that is not the root, not a parameter and has no
  // control dependencies. Collectives are removed like any other dead
  // instruction.
  absl::Status RemoveInstructionAndUnusedOperands(HloInstruction* instruction);
  // Replaces every use of `old_instruction` (and its root role) with
  // `new_instruction`, carries over metadata and frontend attributes when
  // `new_instruction` has none, then removes `old_instruction` and the
  // operands it leaves dead. Shapes must be compatible.
  absl::Status ReplaceInstruction(HloInstruction* old_instruction,
                                  HloInstruction* new_instruction);

  // `execution_thread="..."` of an async wrapped computation, verbatim;
  // empty if not written.
  const std::string& execution_thread() const { return extra().execution_thread; }
  void set_execution_thread(std::string t) { mutable_extra().execution_thread = std::move(t); }

  // Fields of the XLA proto this computation was read from that hilo does
  // not model, serialized; empty when none (owned by hilo/proto).
  const std::string& opaque_proto_fields() const { return extra().opaque_proto_fields; }
  void set_opaque_proto_fields(std::string bytes) {
    if (!bytes.empty() || extra_or_null() != nullptr) mutable_extra().opaque_proto_fields = std::move(bytes);
  }

  // Text-format fidelity state owned by the parser and printer. Opaque to
  // everything else.
  // Three bytes (the flags are the instruction's text-flag bits,
  // HloInstruction::kTextFlagBits; higher bits are dropped as
  // set_text_flags drops them), in the padding after the live count: they were
  // 8 bytes of every computation (docs/performance.md, "twenty-third
  // session: a smaller instruction").
  struct __attribute__((packed)) TextInfo {
    uint32_t flags : HloInstruction::kTextFlagBits = 0;
    uint32_t has_signature : 1 = 0;
  };
  static_assert(sizeof(TextInfo) == 3 && alignof(TextInfo) == 1);
  const TextInfo& text_info() const { return text_info_; }
  TextInfo* mutable_text_info() { return &text_info_; }
  // `(p: f32[2]) -> f32[2]` verbatim, when written otherwise than XLA prints
  // it (empty when written canonically: the printer derives it), and the
  // signature as XLA would print it when the text was parsed: the printer
  // writes the written one back only while that is still current. In
  // extra(): most computations have neither, and they were 16 bytes of
  // every computation.
  absl::string_view written_signature() const { return extra().written_signature.view(); }
  absl::string_view canonical_signature() const { return extra().canonical_signature.view(); }
  void set_written_signature(absl::string_view written, absl::string_view canonical) {
    if (written.empty() && canonical.empty() && extra_or_null() == nullptr) return;
    Extra& extra = mutable_extra();
    extra.written_signature.Assign(written);
    extra.canonical_signature.Assign(canonical);
  }

 private:
  friend class HloModule;

  InstructionName name_;
  // The module (parent()), or, with kExtraBit set, the address of the Extra
  // block, which then holds the module: one word where the two took one
  // each (docs/performance.md, "twenty-fifth session").
  static constexpr uintptr_t kExtraBit = 1;
  uintptr_t module_or_extra_ = 0;
  // Sets the module, where the word or the Extra block holds it (HloModule).
  void SetParent(HloModule* module);
  // Owned instructions in list order; removed ones leave a null hole that
  // compaction closes once holes outnumber live instructions. A small
  // computation's (a reduce's `add`: two parameters and the sum) are kept in
  // the computation itself, as are up to two parameters: the two vectors'
  // heap blocks were 80 bytes of a 3-instruction computation's ~1.2 KB
  // (docs/performance.md, "twelfth session"). Plain pointers (the destructor
  // deletes them; RemoveInstruction hands one to Extra::removed), so that
  // the list grows by copying them: absl moved unique_ptrs one at a time, 14 instructions each, where
  // a pointer takes 5 (a pass adding to the 374,006-instruction generated
  // module grew it once: 5.5 M; docs/performance.md, "the instruction list
  // as plain pointers").
  absl::InlinedVector<HloInstruction*, 3> instructions_;
  // The live instruction count (bits 1-31: 2^31 instructions would take
  // hundreds of GB) and whether CreateInArena made this (bit 0), in one
  // 32-bit word with up_edges_logged_ and text_info_: adding or removing an
  // instruction adds or subtracts kCountUnit (one instruction, where a bit
  // field took five).
  static constexpr uint32_t kInArenaBit = 1;
  static constexpr uint32_t kCountUnit = 2;
  uint32_t count_and_arena_ = 0;
  int64_t LiveCount() const { return static_cast<int64_t>(count_and_arena_ >> 1); }
  bool InArena() const { return (count_and_arena_ & kInArenaBit) != 0; }
  // Every up-edge of this computation is in extra().up_edges (FindCycle).
  // Set by FindCycle (const: it learns this while reading): a byte of its
  // own, not a bit of a word other threads read.
  mutable bool up_edges_logged_ = false;
  TextInfo text_info_;
  ParameterList parameters_;
  HloInstruction* root_ = nullptr;
  // What most computations do not have, allocated on first write: a module
  // of many small computations pays for every byte of a computation.
  struct Extra {
    HloModule* module = nullptr;  // parent()
    // Removed instructions stay allocated until the computation is
    // destroyed, so that a pass holding a pointer to one (for example a
    // worklist collected before expanding) can still see that it was
    // removed (parent() == nullptr) instead of reading freed memory.
    std::vector<std::unique_ptr<HloInstruction>> removed;
    std::string execution_thread;
    std::string opaque_proto_fields;
    // While up_edges_logged_: (user, dependency) for every up-edge added
    // since the last sweep found none (FindCycle).
    std::vector<std::pair<const HloInstruction*, const HloInstruction*>> up_edges;
    CompactString written_signature;
    CompactString canonical_signature;
  };
  void LogIfUpEdge(const HloInstruction* user, const HloInstruction* dep);
  Extra* extra_or_null() const {
    const uintptr_t bits = module_or_extra_;
    return (bits & kExtraBit) != 0 ? reinterpret_cast<Extra*>(bits & ~kExtraBit) : nullptr;
  }
  const Extra& extra() const {
    static const Extra* const kDefault = new Extra();
    const Extra* extra = extra_or_null();
    return extra != nullptr ? *extra : *kDefault;
  }
  // Made on first write, with the module moved into it.
  Extra& mutable_extra();
};

// A module of many small computations pays for every byte of one (docs/
// performance.md, "tenth session"; 88 bytes with libstdc++ on a 64-bit
// target, three instructions and two parameters included; 112 before the
// text info went into the live count's word, "twenty-third session"; 104
// before the parameters' list took 16 bytes and the module and the extra
// block shared a word, "twenty-fifth session").
static_assert(sizeof(void*) != 8 || sizeof(HloComputation) <= 88,
              "HloComputation grew: every computation of every module pays for it");

}  // namespace hilo

#endif  // HILO_IR_HLO_COMPUTATION_H_
