#include "hilo/ir/hlo_instruction.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_computation.h"

// Under AddressSanitizer: LeakSanitizer is told of the blocks whose only
// pointer it can not see (NewUncommon).
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HILO_LSAN_HIDDEN_POINTERS 1
#endif

namespace hilo {

const HloInstruction::Absent<HloInstruction::CommonAttributes> HloInstruction::kAbsentCommon;
const HloInstruction::Absent<HloInstruction::CollectiveAttributes>
    HloInstruction::kAbsentCollective;
const HloInstruction::Absent<DotDimensionNumbers> HloInstruction::kAbsentDot;
const HloInstruction::Absent<FrontendAttributes> HloInstruction::kAbsentFrontend;
const HloInstruction::Absent<HloInstruction::Rare> HloInstruction::kAbsentRare;

// ---------------------------------------------------------------------------
// FrontendAttributes

const std::string* FrontendAttributes::Find(absl::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void FrontendAttributes::Set(absl::string_view key, absl::string_view value) {
  // One pass: find the key, and meanwhile whether the entries are sorted and
  // where the key would go among them. Passes stamp attributes on every
  // collective of a module, so this is on a hot path.
  const size_t n = entries_.size();
  // The common case first: a key that sorts after the only entry (a pass
  // stamping `stream_id` next to `collective_type`) is appended, with one
  // comparison and no general insert.
  if (n == 1 && entries_[0].first < key) {
    entries_.emplace_back(std::piecewise_construct, std::forward_as_tuple(key.data(), key.size()),
                          std::forward_as_tuple(value.data(), value.size()));
    return;
  }
  bool sorted = true;
  size_t insert_at = n;
  for (size_t i = 0; i < n; ++i) {
    const std::string& k = entries_[i].first;
    if (k == key) {
      entries_[i].second.assign(value.data(), value.size());
      return;
    }
    if (i > 0 && k < entries_[i - 1].first) sorted = false;
    if (insert_at == n && key < k) insert_at = i;
  }
  // Built in place: no temporary strings to move and destroy.
  entries_.emplace(entries_.begin() + (sorted ? insert_at : n), std::piecewise_construct,
                   std::forward_as_tuple(key.data(), key.size()),
                   std::forward_as_tuple(value.data(), value.size()));
}

void FrontendAttributes::Append(absl::string_view key, absl::string_view value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::string(value);
      return;
    }
  }
  entries_.emplace_back(std::string(key), std::string(value));
}

bool FrontendAttributes::Remove(absl::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// Creation

std::unique_ptr<HloInstruction> HloInstruction::Create(HloOpcode opcode, Shape shape,
                                                       absl::Span<HloInstruction* const> operands,
                                                       absl::string_view name) {
  return Create(opcode, SharedShape(std::move(shape)), operands, name);
}

std::unique_ptr<HloInstruction> HloInstruction::Create(HloOpcode opcode, SharedShape shape,
                                                       absl::Span<HloInstruction* const> operands,
                                                       absl::string_view name) {
  std::unique_ptr<HloInstruction> inst(new HloInstruction(opcode, std::move(shape)));
  inst->name_.Assign(name);
  inst->operands_.reserve(operands.size());
  for (HloInstruction* operand : operands) inst->AppendOperand(operand);
  return inst;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateInArena(InstructionArena& arena,
                                                              HloOpcode opcode, SharedShape shape,
                                                              absl::string_view name) {
  static_assert(alignof(HloInstruction) <= InstructionArena::kMaxAlignment);
  void* memory = arena.Allocate(sizeof(HloInstruction), alignof(HloInstruction));
  std::unique_ptr<HloInstruction> inst(new (memory) HloInstruction(opcode, std::move(shape)));
  inst->in_arena_ = true;
  inst->name_.AssignInArena(name, arena);
  return inst;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateParameter(int64_t number, Shape shape,
                                                                absl::string_view name) {
  auto inst = Create(HloOpcode::kParameter, std::move(shape), {}, name);
  inst->set_parameter_number(number);
  return inst;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateReshape(Shape shape,
                                                              HloInstruction* operand) {
  return Create(HloOpcode::kReshape, std::move(shape), {operand});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateGetTupleElement(Shape shape,
                                                                      HloInstruction* operand,
                                                                      int64_t index) {
  auto inst = Create(HloOpcode::kGetTupleElement, std::move(shape), {operand});
  inst->set_tuple_index(index);
  return inst;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateCustomCall(
    Shape shape, absl::Span<HloInstruction* const> operands, std::string target,
    std::string backend_config) {
  return CreateCustomCall(SharedShape(std::move(shape)), operands, std::move(target),
                          std::move(backend_config));
}

std::unique_ptr<HloInstruction> HloInstruction::CreateCustomCall(
    SharedShape shape, absl::Span<HloInstruction* const> operands, std::string target,
    std::string backend_config) {
  auto inst = Create(HloOpcode::kCustomCall, std::move(shape), operands);
  inst->set_custom_call_target(std::move(target));
  if (!backend_config.empty()) inst->set_backend_config(std::move(backend_config));
  return inst;
}


void HloInstruction::operator delete(HloInstruction* inst, std::destroying_delete_t) {
  const bool in_arena = inst->in_arena_;
  inst->~HloInstruction();
  if (!in_arena) ::operator delete(inst);  // unsized: clang 14 has no sized delete by default
}


// ---------------------------------------------------------------------------
// Operands and users

// Rare::user_index: the positions of an instruction's users in its users_
// list, found by the user. A set of 32-bit positions, each hashed and
// compared through the user at that position: 5 bytes a slot with the
// control byte, where a map from user to position took 17 (2.2 MB for a
// value with 100,000 users; docs/performance.md, "fourteenth session").
// users_ must hold the user at a position while the position is in the
// set: AddUser appends before inserting, RemoveUser erases before moving.
class HloInstruction::UserIndex {
 public:
  explicit UserIndex(const HloInstruction* owner) : positions_(0, Hash{owner}, Eq{owner}) {}

  // The position of `user` in the owner's users_, or -1.
  int64_t Find(const HloInstruction* user) const {
    auto it = positions_.find(user);
    return it == positions_.end() ? -1 : static_cast<int64_t>(*it);
  }
  void Insert(size_t pos) { positions_.insert(static_cast<uint32_t>(pos)); }
  void Erase(size_t pos) { positions_.erase(static_cast<uint32_t>(pos)); }
  void Reserve(size_t n) { positions_.reserve(n); }
  // AddUser's `user` for a list of kIndexThreshold users or more and no
  // index (out of line: AddUser's usual path stays as short as before).
  [[gnu::noinline]] static void AddToLongList(HloInstruction* owner, HloInstruction* user);
  // Makes `owner`'s index from its users_.
  static UserIndex* BuildFor(HloInstruction* owner) {
    auto& user_index = owner->mutable_rare().user_index;
    user_index.reset(new UserIndex(owner));
    user_index->Reserve(owner->users_.size());
    for (size_t i = 0; i < owner->users_.size(); ++i) user_index->Insert(i);
    return user_index.get();
  }

 private:
  struct Hash {
    using is_transparent = void;
    const HloInstruction* owner;
    size_t operator()(const HloInstruction* user) const {
      return absl::Hash<const HloInstruction*>()(user);
    }
    size_t operator()(uint32_t pos) const { return (*this)(owner->users_[pos]); }
  };
  struct Eq {
    using is_transparent = void;
    const HloInstruction* owner;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t pos, const HloInstruction* user) const {
      return owner->users_[pos] == user;
    }
    bool operator()(const HloInstruction* user, uint32_t pos) const { return (*this)(pos, user); }
  };
  absl::flat_hash_set<uint32_t, Hash, Eq> positions_;
};

void HloInstruction::UserIndexDeleter::operator()(UserIndex* index) const { delete index; }

namespace {
bool UserIndexLazy() {
  static const bool lazy = !EnvSwitchIsZero("HILO_USER_INDEX_LAZY");
  return lazy;
}
// An instruction with more users than this finds them through a UserIndex.
constexpr size_t kIndexThreshold = 16;
// A user with at most this many operands tells without the index whether it
// is a user already (AddUser).
constexpr int64_t kFewOperands = 16;
}  // namespace

// The index is built when first needed, not as the list passes
// kIndexThreshold: AddUser is called once `user` holds this instruction as
// an operand (AppendOperand, ReplaceOperandWith and ReplaceOperandWithAll
// store it first), and `user` is a user already exactly when it held it
// before, i.e. when this instruction is in two of its operand slots now
// (ReplaceOperandWithAll stores a new operand in one slot before AddUser).
// A user with few operands answers that from its own list, so loading a
// value's 100,000 single-call users builds no index (0.6 MB at many small
// computations' peak; docs/performance.md, "twenty-eighth session",
// rss-many); RemoveUser builds it for a long list. HILO_USER_INDEX_LAZY=0
// builds it as the list passes kIndexThreshold, as before.
void HloInstruction::AddUser(HloInstruction* user) {
  if (user->parent_ != nullptr) user->parent_->NoteNewEdge(user, this);
  if (UserIndex* user_index = FindUserIndex(); user_index != nullptr) {
    if (user_index->Find(user) >= 0) return;
    users_.push_back(user);
    user_index->Insert(users_.size() - 1);
    return;
  }
  const absl::Span<HloInstruction* const> users = users_.span();
  if (users.size() >= kIndexThreshold) [[unlikely]] {
    UserIndex::AddToLongList(this, user);
    return;
  }
  if (std::find(users.begin(), users.end(), user) != users.end()) return;
  // A loader's small lists go to the module's arena with its groups
  // (HILO_ARENA_USERS=0: the heap; docs/performance.md, "twenty-fifth
  // session", ir-88).
  users_.push_back(user, [this] { return ArenaUsersEnabled() ? GroupArena() : nullptr; });
}

void HloInstruction::UserIndex::AddToLongList(HloInstruction* owner, HloInstruction* user) {
  if (user->operand_count() <= kFewOperands && UserIndexLazy()) {
    const absl::Span<HloInstruction* const> operands = user->operands_.span();
    if (std::count(operands.begin(), operands.end(), owner) >= 2) return;
    owner->users_.push_back(user);
    return;
  }
  const absl::Span<HloInstruction* const> users = owner->users_.span();
  if (std::find(users.begin(), users.end(), user) != users.end()) return;
  owner->users_.push_back(user);
  BuildFor(owner);
}

void HloInstruction::RemoveUser(HloInstruction* user) {
  UserIndex* user_index = FindUserIndex();
  if (user_index == nullptr && users_.size() > kIndexThreshold) user_index = UserIndex::BuildFor(this);
  if (user_index != nullptr) {
    const int64_t found = user_index->Find(user);
    if (found < 0) return;
    // Swap-and-pop keeps removal O(1) for values with very many users; the
    // order of users stays deterministic.
    const size_t pos = static_cast<size_t>(found);
    const size_t last = users_.size() - 1;
    user_index->Erase(pos);
    if (pos != last) {
      user_index->Erase(last);
      users_[pos] = users_[last];
      user_index->Insert(pos);
    }
    users_.pop_back();
    return;
  }
  const absl::Span<HloInstruction* const> users = users_.span();
  auto it = std::find(users.begin(), users.end(), user);
  if (it != users.end()) users_.erase(it);
}

bool HloInstruction::IsUserOf(const HloInstruction* operand) const {
  const absl::Span<HloInstruction* const> operands = operands_.span();
  return std::find(operands.begin(), operands.end(), operand) != operands.end();
}

void HloInstruction::AppendOperand(HloInstruction* operand) {
  operands_.push_back(operand);
  operand->AddUser(this);
}

void HloInstruction::ReplaceOperandWith(int64_t i, HloInstruction* new_operand) {
  HloInstruction* old_operand = operands_[i];
  if (old_operand == new_operand) return;
  operands_[i] = new_operand;
  new_operand->AddUser(this);
  if (!IsUserOf(old_operand)) old_operand->RemoveUser(this);
}

void HloInstruction::ReplaceOperandWithAll(HloInstruction* old_operand,
                                           HloInstruction* new_operand) {
  if (old_operand == new_operand) return;
  // The first slot is replaced before AddUser, the others after it, so that
  // AddUser finds new_operand in two slots only if it held one before.
  bool replaced = false;
  for (HloInstruction*& operand : operands_) {
    if (operand == old_operand) {
      operand = new_operand;
      if (!replaced) new_operand->AddUser(this);
      replaced = true;
    }
  }
  if (!replaced) return;
  old_operand->RemoveUser(this);
}

void HloInstruction::DetachFromOperands() {
  for (HloInstruction* operand : operands_) operand->RemoveUser(this);
  operands_.clear();
}

absl::Status HloInstruction::ReplaceAllUsesWith(HloInstruction* replacement) {
  if (!shape_->Compatible(replacement->shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot replace all uses of ", name(), " (", shape_->ToString(), ") with ",
        replacement->name(), " (", replacement->shape().ToString(), "): shapes differ"));
  }
  ReplaceAllUsesWithDifferentShape(replacement);
  return absl::OkStatus();
}

void HloInstruction::ReplaceAllUsesWithDifferentShape(HloInstruction* replacement) {
  if (replacement == this) return;
  // Users of `replacement` that are also users of this (e.g. a user using
  // both) are handled by ReplaceOperandWithAll.
  // A copy (each replacement edits users_), inline for the usual few users:
  // no heap block per replaced instruction.
  const absl::Span<HloInstruction* const> span = users_.span();
  absl::InlinedVector<HloInstruction*, 8> users(span.begin(), span.end());
  for (HloInstruction* user : users) {
    if (user == replacement) continue;  // do not make replacement use itself
    user->ReplaceOperandWithAll(this, replacement);
  }
  if (parent_ != nullptr && parent_->root_instruction() == this) {
    parent_->set_root_instruction(replacement);
  }
}

// ---------------------------------------------------------------------------
// Control dependencies

void HloInstruction::AddControlDependencyTo(HloInstruction* successor) {
  const std::vector<HloInstruction*>& succs = control_successors();
  if (std::find(succs.begin(), succs.end(), successor) != succs.end()) return;
  if (successor->parent_ != nullptr) successor->parent_->NoteNewEdge(successor, this);
  mutable_rare().control_successors.push_back(successor);
  successor->mutable_rare().control_predecessors.push_back(this);
}

void HloInstruction::RemoveControlDependencyTo(HloInstruction* successor) {
  Rare* rare = rare_or_null();
  if (rare == nullptr) return;
  auto& succs = rare->control_successors;
  auto it = std::find(succs.begin(), succs.end(), successor);
  if (it == succs.end()) return;
  succs.erase(it);
  auto& preds = successor->rare_or_null()->control_predecessors;
  preds.erase(std::find(preds.begin(), preds.end(), this));
}

void HloInstruction::DropAllControlDependencies() {
  Rare* rare = rare_or_null();
  if (rare == nullptr) return;
  for (HloInstruction* succ : rare->control_successors) {
    auto& preds = succ->rare_or_null()->control_predecessors;
    preds.erase(std::find(preds.begin(), preds.end(), this));
  }
  for (HloInstruction* pred : rare->control_predecessors) {
    auto& succs = pred->rare_or_null()->control_successors;
    succs.erase(std::find(succs.begin(), succs.end(), this));
  }
  rare->control_successors.clear();
  rare->control_predecessors.clear();
}

// ---------------------------------------------------------------------------
// Called computations

namespace {
// `T` in `arena`'s memory, or on the heap without one.
template <typename T>
T* NewIn(InstructionArena* arena) {
  if (arena == nullptr) return new T;
  return new (arena->Allocate(sizeof(T), alignof(T))) T;
}
// Ends what NewIn made: its destructor, and its heap block unless it is
// in an arena.
template <typename T>
void DeleteIn(T* object, bool in_arena) {
  if (in_arena) {
    object->~T();
  } else {
    delete object;
  }
}
}  // namespace

HloInstruction::~HloInstruction() {
  // The Uncommon block holds the common group's word, which its destructor
  // ends (CommonGroup::~CommonGroup).
  if (Uncommon* uncommon = uncommon_or_null(); uncommon != nullptr) {
    const bool in_arena = common_.uncommon_in_arena();
    common_.ForgetUncommon();
    DeleteIn(uncommon, in_arena);
  }
}

HloInstruction::Uncommon& HloInstruction::NewUncommon() {
  static_assert(alignof(Uncommon) >= 8, "the block's address leaves the three tag bits clear");
  InstructionArena* arena = GroupArena();
  Uncommon* uncommon = NewIn<Uncommon>(arena);
#if defined(HILO_LSAN_HIDDEN_POINTERS)
  // The instruction keeps this block's address complemented
  // (CommonGroup::PublishUncommon), which LeakSanitizer can not follow: a
  // heap block is a root of its own for it, so that a module kept to the
  // end (hilo-opt's RetireModule, a death test's child) does not report
  // the block and the groups it points to as leaked. Its life is the
  // instruction's all the same (~HloInstruction deletes it).
  if (arena == nullptr) __lsan_ignore_object(uncommon);
#endif
  common_.CopyTo(uncommon->common);
  common_.PublishUncommon(uncommon, arena != nullptr);
  return *uncommon;
}

void HloInstruction::CommonGroup::Destroy() {
  // Every tagged form's block must leave the three tag bits clear, and so
  // must a computation kept inline.
  static_assert(alignof(CalledAttributeList) >= 8 && alignof(CommonAttributes) >= 8 &&
                alignof(HloComputation) >= 8);
  const uintptr_t bits = Bits();
  if ((bits & (kListAlone | kGroup)) == 0) {  // none, or inline
    word_ = nullptr;
    return;
  }
  const bool in_arena = (bits & kInArena) != 0;
  if ((bits & kListAlone) != 0) {
    DeleteIn(reinterpret_cast<CalledAttributeList*>(bits & ~kTags), in_arena);
  } else {
    DeleteIn(reinterpret_cast<CommonAttributes*>(bits & ~kTags), in_arena);
  }
  word_ = nullptr;
}

CalledComputationAttribute HloInstruction::CommonGroup::InlineAttribute(
    const HloInstruction& owner) const {
  return {InlineCalledName(owner.opcode_), CalledComputationList{word_}, false};
}

CalledAttributeList& HloInstruction::CommonGroup::NewCalled(const HloInstruction& owner) {
  // Read once per process.
  static const bool list_alone = !EnvSwitchIsZero("HILO_CALLED_LIST_ALONE");
  if (!list_alone) return NewGroup(owner).called;
  InstructionArena* arena = owner.GroupArena();
  auto* list = NewIn<CalledAttributeList>(arena);
  if (is_inline()) list->push_back(InlineAttribute(owner));
  SetBits(reinterpret_cast<uintptr_t>(list) | kListAlone | (arena != nullptr ? kInArena : 0));
  return *list;
}

HloInstruction::CommonAttributes& HloInstruction::CommonGroup::NewGroup(const HloInstruction& owner) {
  InstructionArena* arena = owner.GroupArena();
  auto* group = NewIn<CommonAttributes>(arena);
  if ((Bits() & kListAlone) != 0) {
    group->called = std::move(*reinterpret_cast<CalledAttributeList*>(Bits() & ~kTags));
  } else if (is_inline()) {
    group->called.push_back(InlineAttribute(owner));
  }
  Destroy();
  SetBits(reinterpret_cast<uintptr_t>(group) | kGroup | (arena != nullptr ? kInArena : 0));
  return *group;
}

void HloInstruction::CommonGroup::ClearCalled() {
  if (const CalledAttributeList* existing = list(); existing != nullptr) {
    const_cast<CalledAttributeList*>(existing)->clear();
  } else {
    word_ = nullptr;  // none, or inline (nothing to free)
  }
}

bool HloInstruction::ArenaGroupsEnabled() {
  static const bool enabled = !EnvSwitchIsZero("HILO_ARENA_GROUPS");
  return enabled;
}

bool HloInstruction::ArenaUsersEnabled() {
  static const bool enabled = !EnvSwitchIsZero("HILO_ARENA_USERS");
  return enabled;
}

InstructionArena* HloInstruction::GroupArena() const {
  return in_arena_ ? InstructionArena::Loading() : nullptr;
}

void HloInstruction::set_metadata(absl::string_view m) {
  order_and_metadata_.SetMetadata(m, GroupArena());
}

AttributeName HloInstruction::InlineCalledName(HloOpcode opcode) {
  // Interned once (the built-in names need no lock, attribute_names.h).
  static const AttributeName to_apply("to_apply");
  static const AttributeName calls("calls");
  return opcode == HloOpcode::kFusion || opcode == HloOpcode::kAsyncStart ? calls : to_apply;
}

std::vector<HloComputation*> HloInstruction::called_computations() const {
  std::vector<HloComputation*> result;
  for (const CalledAttributeView& attr : called_computation_attributes()) {
    result.insert(result.end(), attr.computations.begin(), attr.computations.end());
  }
  return result;
}

absl::Span<HloComputation* const> HloInstruction::called_computations(absl::string_view name) const {
  for (const CalledAttributeView& attr : called_computation_attributes()) {
    if (attr.name == name) return attr.computations;
  }
  return {};
}

HloComputation* HloInstruction::called_computation(absl::string_view name) const {
  auto comps = called_computations(name);
  return comps.size() == 1 ? comps[0] : nullptr;
}

namespace {
// Whether attribute `name` of `computations` can be kept inside an
// instruction of `opcode` (HloInstruction::CommonGroup): one computation,
// not null, unbraced, under the name that opcode's one computation has.
bool FitsInline(HloOpcode opcode, absl::string_view name,
                absl::Span<HloComputation* const> computations, bool braced) {
  static const bool on = !EnvSwitchIsZero("HILO_CALLED_INLINE");  // read once per process
  return on && !braced && computations.size() == 1 && computations[0] != nullptr &&
         HloInstruction::InlineCalledName(opcode) == name;
}
}  // namespace

void HloInstruction::SetCalledComputations(absl::string_view name,
                                           absl::Span<HloComputation* const> computations,
                                           bool braced) {
  CommonGroup& common = common_group();
  // None yet, or the one inline, which has this name if it fits.
  if (common.absent_or_inline() && FitsInline(opcode_, name, computations, braced)) {
    common.SetInline(computations[0]);
    return;
  }
  CalledAttributeList& called = common.MutableCalled(*this);
  for (auto& attr : called) {
    if (attr.name == name) {
      attr.computations.assign(computations.begin(), computations.end());
      attr.braced = braced;
      return;
    }
  }
  called.push_back(
      {AttributeName(name), CalledComputationList(computations.begin(), computations.end()), braced});
}

void HloInstruction::AddCalledComputations(absl::string_view name,
                                           absl::Span<HloComputation* const> computations,
                                           bool braced) {
  CommonGroup& common = common_group();
  if (common.list() == nullptr && !common.is_inline() &&
      FitsInline(opcode_, name, computations, braced)) {
    common.SetInline(computations[0]);
    return;
  }
  common.MutableCalled(*this).push_back(
      {AttributeName(name), CalledComputationList(computations.begin(), computations.end()), braced});
}

void HloInstruction::ClearCalledComputations() { common_group().ClearCalled(); }

// ---------------------------------------------------------------------------
// Attributes

int64_t HloInstruction::collective_dimension() const {
  const std::optional<std::vector<int64_t>>& dims = dimensions();
  if (!dims.has_value() || dims->empty()) return -1;
  return (*dims)[0];
}

absl::string_view HloInstruction::ApiVersionName(int v) {
  switch (v) {
    case 1: return "API_VERSION_ORIGINAL";
    case 2: return "API_VERSION_STATUS_RETURNING";
    case 3: return "API_VERSION_STATUS_RETURNING_UNIFIED";
    case 4: return "API_VERSION_TYPED_FFI";
    default: return "API_VERSION_UNSPECIFIED";
  }
}

std::optional<int> HloInstruction::ApiVersionFromName(absl::string_view name) {
  for (int v = 0; v <= 4; ++v) {
    if (ApiVersionName(v) == name) return v;
  }
  return std::nullopt;
}

const std::string* HloInstruction::raw_attribute(absl::string_view name) const {
  for (const auto& attr : raw_attributes()) {
    if (attr.name == name) return &attr.value;
  }
  return nullptr;
}

void HloInstruction::SetRawAttribute(absl::string_view name, std::string value) {
  std::vector<RawAttribute>& raw = common_group().MutableGroup(*this).raw;
  for (auto& attr : raw) {
    if (attr.name == name) {
      attr.value = std::move(value);
      return;
    }
  }
  raw.push_back({std::string(name), std::move(value)});
}

bool HloInstruction::RemoveRawAttribute(absl::string_view name) {
  CommonAttributes* group = common_group().own_group();
  if (group == nullptr) return false;
  std::vector<RawAttribute>& raw = group->raw;
  for (auto it = raw.begin(); it != raw.end(); ++it) {
    if (it->name == name) {
      raw.erase(it);
      return true;
    }
  }
  return false;
}

void HloInstruction::TakeMetadataIfAbsent(HloInstruction& removed) {
  order_and_metadata_.TakeMetadata(removed.order_and_metadata_);
  if (frontend_attributes().empty() && !removed.frontend_attributes().empty()) {
    set_frontend_attributes(removed.frontend_attributes());
  }
}

bool HloInstruction::IsCollectiveWithReplicaGroups(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kRaggedAllToAll:
    case HloOpcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

}  // namespace hilo
