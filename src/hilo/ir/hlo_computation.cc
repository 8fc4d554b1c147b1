#include "hilo/ir/hlo_computation.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {

HloComputation::~HloComputation() {
  // Break operand/user links first so destruction order does not matter.
  for (auto& inst : instructions_) {
    if (inst != nullptr) inst->operands_.clear();
  }
  // Before the live instructions, as when it was the last member.
  if (Extra* extra = extra_or_null(); extra != nullptr) {
    module_or_extra_ = reinterpret_cast<uintptr_t>(extra->module);
    delete extra;
  }
  for (HloInstruction* inst : instructions_) delete inst;
}

void HloComputation::SetParent(HloModule* module) {
  if (Extra* extra = extra_or_null(); extra != nullptr) {
    extra->module = module;
  } else {
    module_or_extra_ = reinterpret_cast<uintptr_t>(module);
  }
}

HloComputation::Extra& HloComputation::mutable_extra() {
  if (Extra* existing = extra_or_null(); existing != nullptr) return *existing;
  static_assert(alignof(Extra) >= 2, "the block's address leaves kExtraBit clear");
  auto* extra = new Extra();
  extra->module = parent();
  // One store, released: a thread reading parent() meanwhile (the verifier
  // checking ahead of a parse) sees the module either way.
  __atomic_store_n(&module_or_extra_, reinterpret_cast<uintptr_t>(extra) | kExtraBit, __ATOMIC_RELEASE);
  return *extra;
}

std::unique_ptr<HloComputation> HloComputation::CreateInArena(InstructionArena& arena,
                                                              absl::string_view name) {
  static_assert(alignof(HloComputation) <= InstructionArena::kMaxAlignment);
  void* memory = arena.Allocate(sizeof(HloComputation), alignof(HloComputation));
  std::unique_ptr<HloComputation> comp(new (memory) HloComputation(absl::string_view()));
  comp->count_and_arena_ |= kInArenaBit;
  comp->name_.AssignInArena(name, arena);
  return comp;
}

void HloComputation::operator delete(HloComputation* computation, std::destroying_delete_t) {
  const bool in_arena = computation->InArena();
  computation->~HloComputation();
  if (!in_arena) ::operator delete(computation);  // unsized, as HloInstruction's
}

bool HloComputation::IsEntryComputation() const {
  const HloModule* module = parent();
  return module != nullptr && module->entry_computation() == this;
}

namespace {

// A speed switch (docs/performance.md): the environment variable is "1".
// HILO_UNIQUE_NAME_COPY=1: a new instruction's name comes from
// HloModule::UniqueInstructionName (a copy kept by the module) instead of
// NameInstructionUniquely.
bool UniqueNamesByCopy() {
  static const bool by_copy = EnvSwitchIsOne("HILO_UNIQUE_NAME_COPY");
  return by_copy;
}

// HILO_CYCLE_SEARCH_WALK=1: FindCycle always walks the whole computation.
bool CycleSearchAlwaysWalks() {
  static const bool walk = EnvSwitchIsOne("HILO_CYCLE_SEARCH_WALK");
  return walk;
}

// HILO_UP_EDGE_LOG=0: FindCycle sweeps the whole computation every time
// instead of reading a log of its up-edges.
bool UpEdgeLogOn() {
  static const bool on = !EnvSwitchIsZero("HILO_UP_EDGE_LOG");
  return on;
}

// Whether `dep` is an operand or a control predecessor of `user`.
bool DependsOn(const HloInstruction* user, const HloInstruction* dep) {
  if (user->IsUserOf(dep)) return true;
  const std::vector<HloInstruction*>& preds = user->control_predecessors();
  return std::find(preds.begin(), preds.end(), dep) != preds.end();
}

}  // namespace

void HloComputation::NoteNoUpEdges() const {
  if (UpEdgeLogOn()) up_edges_logged_ = true;
}

void HloComputation::LogIfUpEdge(const HloInstruction* user, const HloInstruction* dep) {
  if (user->parent_ != this || dep->parent_ != this || dep->unique_id_ < user->unique_id_) return;
  auto& log = mutable_extra().up_edges;
  // Past the computation's size, reading the log would cost what the sweep
  // costs: drop it.
  constexpr size_t kMinLog = 1024;
  if (log.size() >= std::max(kMinLog, static_cast<size_t>(LiveCount()))) {
    up_edges_logged_ = false;
    std::vector<std::pair<const HloInstruction*, const HloInstruction*>>().swap(log);
    return;
  }
  log.emplace_back(user, dep);
}

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instruction) {
  HloInstruction* inst = instruction.get();
  inst->parent_ = this;
  HloModule* const module = parent();
  if (module != nullptr) {
    // A written name that is still free is kept as is (the common case:
    // one hash and one copy into the module's name set).
    const bool trusted = module->bulk_loading() && !inst->name_.empty();
    if (!trusted && inst->name_.empty() && !UniqueNamesByCopy()) {
      module->NameInstructionUniquely(inst, HloOpcodeString(inst->opcode()));
    } else if (!trusted && (inst->name_.empty() || !module->ReserveInstructionName(inst->name()))) {
      absl::string_view hint = inst->name();
      if (hint.empty()) hint = HloOpcodeString(inst->opcode());
      inst->name_.Assign(module->UniqueInstructionName(hint));
    }
    inst->unique_id_ = static_cast<int32_t>(module->NextUniqueId());
  }
  inst->index_in_parent_ = static_cast<int32_t>(instructions_.size());
  if (up_edges_logged_) {
    // Its edges made before it was here, now that it has its id.
    for (const HloInstruction* operand : inst->operands_) LogIfUpEdge(inst, operand);
    for (const HloInstruction* user : inst->users_) LogIfUpEdge(user, inst);
    if (inst->rare_or_null() != nullptr) {
      for (const HloInstruction* pred : inst->control_predecessors()) LogIfUpEdge(inst, pred);
      for (const HloInstruction* succ : inst->control_successors()) LogIfUpEdge(succ, inst);
    }
  }
  instructions_.push_back(inst);
  instruction.release();  // owned by the list now (after push_back, which may throw)
  count_and_arena_ += kCountUnit;
  // A bulk load notes its channel instructions once, at its end.
  if (module != nullptr && !module->bulk_loading() && IsChannelOpcode(inst->opcode())) {
    module->NoteChannelInstructionsChanged();
  }
  if (inst->opcode() == HloOpcode::kParameter && inst->parameter_number() >= 0 &&
      inst->parameter_number() < (int64_t{1} << 20)) {
    size_t n = static_cast<size_t>(inst->parameter_number());
    if (n >= parameters_.size()) {
      if (n > parameters_.size()) parameters_.MoveToHeapForNulls();  // holes before n
      while (parameters_.size() < n) parameters_.push_back(nullptr);
      parameters_.push_back(inst);
    } else if (parameters_[n] == nullptr) {
      parameters_[n] = inst;
    }
  }
  return inst;
}

std::vector<HloInstruction*> HloComputation::instructions() const {
  std::vector<HloInstruction*> result;
  AppendInstructionsTo(&result);
  return result;
}

void HloComputation::ForEachInstruction(absl::FunctionRef<void(HloInstruction*)> visit) const {
  for (const auto& inst : instructions_) {
    if (inst != nullptr) visit(inst);
  }
}

void HloComputation::AppendInstructionsTo(std::vector<HloInstruction*>* out) const {
  out->reserve(out->size() + static_cast<size_t>(LiveCount()));
  for (const auto& inst : instructions_) {
    if (inst != nullptr) out->push_back(inst);
  }
}

HloInstruction* HloComputation::parameter_instruction(int64_t number) const {
  if (number < 0 || number >= static_cast<int64_t>(parameters_.size())) return nullptr;
  return parameters_[number];
}

std::vector<HloInstruction*> HloComputation::MakeInstructionPostOrder() const {
  std::vector<HloInstruction*> post_order;
  post_order.reserve(LiveCount());
  WalkPostOrderUntil([&](HloInstruction* inst) {
    post_order.push_back(inst);
    return false;
  });
  return post_order;
}

void HloComputation::WalkPostOrderUntil(absl::FunctionRef<bool(HloInstruction*)> visit) const {
  enum State : uint8_t { kNew, kVisiting, kVisited };
  // Dense state by list position: no hashing on this hot path.
  std::vector<State> state(instructions_.size(), kNew);
  auto state_of = [&](const HloInstruction* inst) -> State& {
    return state[inst->index_in_parent_];
  };
  // An operand from another computation (malformed input) is not ours to visit.
  auto is_ours = [&](const HloInstruction* inst) { return inst->parent_ == this; };

  std::vector<HloInstruction*> stack;
  int64_t visited = 0;
  // True when `visit` asked to stop.
  auto visit_from = [&](HloInstruction* root) {
    stack.push_back(root);
    while (!stack.empty()) {
      HloInstruction* current = stack.back();
      State& s = state_of(current);
      if (s == kVisited) {
        stack.pop_back();
        continue;
      }
      if (s == kVisiting) {
        s = kVisited;
        ++visited;
        stack.pop_back();
        if (visit(current)) return true;
        continue;
      }
      s = kVisiting;
      // Operands reversed so the first operand is visited first; control
      // predecessors last so they are visited before the operands.
      const absl::Span<HloInstruction* const> operands = current->operands_.span();
      for (size_t i = operands.size(); i-- > 0;) {
        HloInstruction* operand = operands[i];
        if (is_ours(operand) && state_of(operand) == kNew) stack.push_back(operand);
      }
      if (const HloInstruction::Rare* rare = current->rare_or_null(); rare != nullptr) {
        for (HloInstruction* pred : rare->control_predecessors) {
          if (is_ours(pred) && state_of(pred) == kNew) stack.push_back(pred);
        }
      }
    }
    return false;
  };
  for (const auto& inst : instructions_) {
    if (inst != nullptr && inst->users_.empty() && inst->control_successors().empty() &&
        state_of(inst) == kNew) {
      if (visit_from(inst)) return;
    }
  }
  // Every instruction visited: no cycle kept one from the roots, so the
  // sweep below would find nothing (each instruction is visited once).
  if (visited == LiveCount()) return;
  // Instructions only reachable through a cycle.
  for (const auto& inst : instructions_) {
    if (inst != nullptr && state_of(inst) == kNew) {
      if (visit_from(inst)) return;
    }
  }
}

bool HloComputation::IsDependencyChain(absl::Span<HloInstruction* const> chain) const {
  if (chain.size() < 2) return true;
  for (size_t k = 1; k < chain.size(); ++k) {
    if (chain[k - 1]->parent_ != this || chain[k]->parent_ != this ||
        chain[k - 1]->index_in_parent_ >= chain[k]->index_in_parent_) {
      return false;
    }
  }
  if (FindCycle().has_value()) return false;
  // Each link is searched forward by default: from chain[k - 1] through
  // users and control successors to chain[k], entering only instructions
  // listed strictly between the two. A path of a topological list between
  // them runs there, and any path found is a dependency (a miss on a list
  // that is not topological only sends the caller to its walk). The ranges
  // of successive links do not overlap, so one mark each is never reset.
  // Between two dots of a layer this enters the activation's few
  // instructions and not the next weight's all-gather chain, which the
  // search back from chain[k] enters on its way. Read per call (two calls a
  // pass run): HILO_DEPENDENCY_CHAIN_FORWARD=0 searches back (the switch of
  // this saving, measured in docs/performance.md, "twenty-sixth session",
  // rep-cc).
  const bool forward = !EnvSwitchIsZero("HILO_DEPENDENCY_CHAIN_FORWARD");
  // Backward, the search from chain[k] for chain[k - 1] only enters
  // instructions listed after chain[k - 1]; an operand listed after its
  // user (which could be in a later search's range) is marked too, which
  // can only make a later search miss (then the caller walks), never find
  // a path that is not there. So one mark each, never reset.
  std::vector<uint8_t> seen(instructions_.size());
  std::vector<const HloInstruction*> stack;
  // One loop per direction (no test of the direction per instruction).
  auto links_hold = [&](auto direction) {
    constexpr bool kForward = decltype(direction)::value;
    for (size_t k = 1; k < chain.size(); ++k) {
      const HloInstruction* target = kForward ? chain[k] : chain[k - 1];
      const int32_t floor = chain[k - 1]->index_in_parent_;
      // Forward: below chain[k] too.
      const int32_t ceiling = chain[k]->index_in_parent_;
      // Whether the search may enter `next` (marking it), or found the target.
      bool found = false;
      auto enter = [&](const HloInstruction* next) {
        found |= next == target;
        const int32_t pos = next->index_in_parent_;
        if (pos <= floor || (kForward && pos >= ceiling) || next->parent_ != this ||
            seen[pos] != 0) {
          return false;
        }
        seen[pos] = 1;
        return true;
      };
      stack.assign(1, kForward ? chain[k - 1] : chain[k]);
      while (!found && !stack.empty()) {
        const HloInstruction* inst = stack.back();
        stack.pop_back();
        for (const HloInstruction* next : kForward ? inst->users_.span() : inst->operands_.span()) {
          if (enter(next)) stack.push_back(next);
        }
        if (const HloInstruction::Rare* rare = inst->rare_or_null(); rare != nullptr) {
          for (const HloInstruction* next :
               kForward ? rare->control_successors : rare->control_predecessors) {
            if (enter(next)) stack.push_back(next);
          }
        }
      }
      if (!found) return false;
    }
    return true;
  };
  return forward ? links_hold(std::true_type()) : links_hold(std::false_type());
}

std::optional<HloComputation::CycleEdge> HloComputation::FindCycle() const {
  if (CycleSearchAlwaysWalks()) return FindCycleByWalk();
  // The up-edges (user, dependency): to an instruction of this computation
  // whose unique id is not below the user's.
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> up;
  size_t edges = 0;
  if (up_edges_logged_) {
    // The logged edges that are still there (a later rewrite may have
    // removed an instruction or rerouted the edge).
    for (const auto& [user, dep] : extra().up_edges) {
      if (user->parent_ == this && dep->parent_ == this && dep->unique_id_ >= user->unique_id_ &&
          DependsOn(user, dep)) {
        up.push_back({user, dep});
      }
    }
    // The searches' budget (the sweep counts the edges; about one an
    // instruction): exceeding it only means walking instead.
    edges = instructions_.size();
  }
  for (const HloInstruction* inst : up_edges_logged_ ? absl::Span<HloInstruction* const>()
                                                     : absl::MakeConstSpan(instructions_)) {
    if (inst == nullptr) continue;
    const int64_t id = inst->unique_id_;
    const absl::Span<HloInstruction* const> operands = inst->operands_.span();
    for (const HloInstruction* dep : operands) {
      if (ABSL_PREDICT_FALSE(dep->unique_id_ >= id) && dep->parent_ == this) up.push_back({inst, dep});
    }
    edges += operands.size();
    const HloInstruction::Rare* rare = inst->rare_or_null();
    if (rare == nullptr) continue;
    for (const HloInstruction* dep : rare->control_predecessors) {
      if (dep->unique_id_ >= id && dep->parent_ == this) up.push_back({inst, dep});
    }
    edges += rare->control_predecessors.size();
  }
  if (up.empty()) {
    NoteNoUpEdges();  // none now: log the ones added from here on
    return std::nullopt;
  }
  // For each up-edge U -> N: can N reach U through instructions whose ids
  // are >= U's? `mark` holds the number of the search that last reached an
  // instruction, so that it is reset for free.
  std::vector<uint32_t> mark(instructions_.size(), 0);
  std::vector<const HloInstruction*> stack;
  size_t budget = instructions_.size() + edges;
  uint32_t search = 0;
  for (const auto& [user, start] : up) {
    ++search;
    const int64_t floor = user->unique_id_;
    mark[start->index_in_parent_] = search;
    stack.assign(1, start);
    while (!stack.empty()) {
      const HloInstruction* inst = stack.back();
      stack.pop_back();
      if (inst == user) return FindCycleByWalk();
      const size_t n_operands = inst->operands_.size();
      const std::vector<HloInstruction*>& preds = inst->control_predecessors();
      if (n_operands + preds.size() + 1 > budget) return FindCycleByWalk();
      budget -= n_operands + preds.size() + 1;
      for (size_t i = 0; i < n_operands + preds.size(); ++i) {
        const HloInstruction* dep = i < n_operands ? inst->operands_[i] : preds[i - n_operands];
        if (dep->parent_ != this || dep->unique_id_ < floor) continue;
        uint32_t& m = mark[dep->index_in_parent_];
        if (m == search) continue;
        m = search;
        stack.push_back(dep);
      }
    }
  }
  return std::nullopt;
}

std::optional<HloComputation::CycleEdge> HloComputation::FindCycleByWalk() const {
  enum State : uint8_t { kNew, kActive, kDone };
  std::vector<State> state(instructions_.size(), kNew);
  // Frame: instruction and the index of the next edge to follow (operands
  // first, then control predecessors).
  std::vector<std::pair<const HloInstruction*, size_t>> stack;
  for (const auto& start : instructions_) {
    if (start == nullptr || state[start->index_in_parent_] != kNew) continue;
    stack.push_back({start, 0});
    state[start->index_in_parent_] = kActive;
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      const size_t n_operands = inst->operands_.size();
      const std::vector<HloInstruction*>& preds = inst->control_predecessors();
      if (next == n_operands + preds.size()) {
        state[inst->index_in_parent_] = kDone;
        stack.pop_back();
        continue;
      }
      const bool control = next >= n_operands;
      const HloInstruction* target = control ? preds[next - n_operands] : inst->operands_[next];
      ++next;
      if (target->parent_ != this) continue;
      State& s = state[target->index_in_parent_];
      if (s == kActive) return CycleEdge{inst, target, control};
      if (s == kNew) {
        s = kActive;
        stack.push_back({target, 0});
      }
    }
  }
  return std::nullopt;
}

bool HloComputation::HasSideEffect(const HloInstruction* instruction) {
  switch (instruction->opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kInfeed:
    case HloOpcode::kOutfeed:
    case HloOpcode::kRng:
    case HloOpcode::kRngGetAndUpdateState:
      return true;
    case HloOpcode::kCustomCall: {
      const std::string* v = instruction->raw_attribute("custom_call_has_side_effect");
      return v != nullptr && *v == "true";
    }
    default:
      return false;
  }
}

absl::Status HloComputation::RemoveInstruction(HloInstruction* instruction) {
  if (instruction->parent_ != this) {
    return absl::InvalidArgumentError(
        absl::StrCat("instruction ", instruction->name(), " is not in computation ", name()));
  }
  if (!instruction->users_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot remove ", instruction->name(), ": it still has ", instruction->user_count(),
        " user(s)"));
  }
  if (instruction == root_) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot remove ", instruction->name(), ": it is the root of ", name()));
  }
  // Relay control dependencies so the ordering they imposed survives.
  for (HloInstruction* pred : instruction->control_predecessors()) {
    for (HloInstruction* succ : instruction->control_successors()) {
      if (pred != succ) pred->AddControlDependencyTo(succ);
    }
  }
  instruction->DropAllControlDependencies();
  instruction->DetachFromOperands();
  if (instruction->opcode() == HloOpcode::kParameter) {
    int64_t n = instruction->parameter_number();
    if (n >= 0 && n < static_cast<int64_t>(parameters_.size()) && parameters_[n] == instruction) {
      parameters_.MoveToHeapForNulls();
      parameters_[n] = nullptr;
    }
  }
  if (HloModule* module = parent(); module != nullptr && IsChannelOpcode(instruction->opcode())) {
    module->NoteChannelInstructionRemoved();
  }
  int64_t index = instruction->index_in_parent_;
  mutable_extra().removed.push_back(std::unique_ptr<HloInstruction>(instructions_[index]));
  instructions_[index] = nullptr;
  instruction->parent_ = nullptr;
  instruction->index_in_parent_ = -1;
  count_and_arena_ -= kCountUnit;
  // Compact once holes outnumber live instructions (amortized O(1)).
  const int64_t holes = static_cast<int64_t>(instructions_.size()) - LiveCount();
  if (holes > 64 && holes > LiveCount()) {
    size_t out = 0;
    for (size_t i = 0; i < instructions_.size(); ++i) {
      if (instructions_[i] == nullptr) continue;
      instructions_[i]->index_in_parent_ = static_cast<int32_t>(out);
      instructions_[out++] = instructions_[i];
    }
    instructions_.resize(out);
  }
  return absl::OkStatus();
}

absl::Status HloComputation::RemoveInstructionAndUnusedOperands(HloInstruction* instruction) {
  // Inline: most dead chains are short (one heap block per call was 7 M
  // instructions of the looped-einsum replacer on 17,000 layers).
  absl::InlinedVector<HloInstruction*, 16> worklist = {instruction};
  bool first = true;
  while (!worklist.empty()) {
    HloInstruction* inst = worklist.back();
    worklist.pop_back();
    if (inst->parent_ != this) continue;  // already removed (listed twice)
    if (!first) {
      if (!inst->users_.empty() || inst == root_ || HasSideEffect(inst) ||
          !inst->control_predecessors().empty() || !inst->control_successors().empty()) {
        continue;
      }
    }
    // Its operands are queued before it is removed (removing detaches it
    // from them); no copy of the list.
    // One push each: InlinedVector's range insert costs more than the
    // pushes of the one to three operands usual here.
    for (HloInstruction* operand : inst->operands_.span()) worklist.push_back(operand);
    absl::Status status = RemoveInstruction(inst);
    if (first && !status.ok()) return status;
    first = false;
  }
  return absl::OkStatus();
}

absl::Status HloComputation::ReplaceInstruction(HloInstruction* old_instruction,
                                                HloInstruction* new_instruction) {
  if (old_instruction == new_instruction) return absl::OkStatus();
  // One shape object (a pass giving the replacement the old one's shared
  // shape) is compatible with itself.
  if (&old_instruction->shape() != &new_instruction->shape() &&
      !old_instruction->shape().Compatible(new_instruction->shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot replace ", old_instruction->name(), " (", old_instruction->shape().ToString(),
        ") with ", new_instruction->name(), " (", new_instruction->shape().ToString(),
        "): shapes are not compatible"));
  }
  old_instruction->ReplaceAllUsesWithDifferentShape(new_instruction);
  absl::Status status = RemoveInstructionAndUnusedOperands(old_instruction);
  // Removed, the old instruction is dead (an error if not: it was not this
  // computation's): what the new one lacks moves over.
  new_instruction->TakeMetadataIfAbsent(*old_instruction);
  return status;
}

}  // namespace hilo
