#include "hilo/ir/attribute_names.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"

namespace hilo {
namespace {

// Attribute names of XLA's HLO text format (the typed ones this project
// interprets and the common ones it keeps verbatim).
constexpr absl::string_view kBuiltinNames[] = {
    "api_version", "backend_config", "batch_group_count", "body", "branch_computations",
    "called_computations", "calls", "channel_id", "comparison_direction", "condition",
    "constrain_layout", "control-predecessors", "custom_call_has_side_effect",
    "custom_call_schedule", "custom_call_target", "dim_labels", "dimensions", "direction",
    "distribution", "dynamic_slice_sizes", "exponent_bits", "false_computation",
    "feature_group_count", "fft_length", "fft_type", "frontend_attributes", "index",
    "indices_are_sorted", "infeed_config", "inplace", "is_host_transfer", "is_stable", "kind",
    "lhs_batch_dims", "lhs_contracting_dims", "literal", "mantissa_bits", "metadata",
    "operand_layout_constraints", "operand_precision", "origin", "outfeed_config",
    "output_to_operand_aliasing", "padding", "padding_type", "precision_config",
    "replica_groups", "rhs_batch_dims", "rhs_contracting_dims", "rng_algorithm",
    "schedule", "scatter_dims_to_operand_dims", "sharding", "slice", "slice_sizes",
    "source_target_pairs", "split_dimension", "split_count", "statistics", "to_apply",
    "true_computation", "tuple_index", "type", "unique_indices", "update_window_dims",
    "use_global_device_ids", "window", "inserted_window_dims", "collapsed_slice_dims",
    "offset_dims", "start_index_map", "index_vector_dim", "operand_batching_dims",
    "start_indices_batching_dims", "scatter_indices_batching_dims",
    "input_batching_dims", "algorithm", "result_accuracy", "async_execution_thread",
    "execution_thread", "largest", "k", "recursive", "sparsity", "convert_element_type",
    "mode"};

const absl::flat_hash_set<absl::string_view>& BuiltinNames() {
  static const auto* const names =
      new absl::flat_hash_set<absl::string_view>(std::begin(kBuiltinNames), std::end(kBuiltinNames));
  return *names;
}

// The parser interns a name per attribute it reads; a direct-mapped table on
// a cheap key (length and the first and last characters) finds almost every
// built-in name with one comparison and no hashing.
constexpr size_t kQuickSlots = 256;
size_t QuickSlot(absl::string_view name) {
  return (name.size() * 131 + static_cast<unsigned char>(name.front()) * 31 +
          static_cast<unsigned char>(name.back())) %
         kQuickSlots;
}

const std::array<absl::string_view, kQuickSlots>& QuickTable() {
  static const auto* const table = [] {
    auto* t = new std::array<absl::string_view, kQuickSlots>();
    for (absl::string_view name : kBuiltinNames) {
      absl::string_view& slot = (*t)[QuickSlot(name)];
      if (slot.empty()) slot = name;
    }
    return t;
  }();
  return *table;
}

}  // namespace

absl::string_view InternAttributeName(absl::string_view name) {
  if (name.empty()) return absl::string_view(kEmptyAttributeName, 0);  // NUL-terminated like the others
  if (absl::string_view quick = QuickTable()[QuickSlot(name)]; quick == name) return quick;
  const auto& builtin = BuiltinNames();
  if (auto it = builtin.find(name); it != builtin.end()) return *it;
  // node_hash_set: elements never move, so views of them stay valid.
  static std::mutex mutex;
  static auto* const pool = new absl::node_hash_set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return *pool->emplace(name).first;
}

namespace {

// The names of `list` (nullptr: none).
std::vector<const char*> Texts(const AttributeOrder::List* list) {
  std::vector<const char*> texts;
  if (list == nullptr) return texts;
  for (const AttributeOrder::Name& name : list->names) texts.push_back(name.text);
  return texts;
}

// The process-wide lists, each stored once, with each name's size and kind
// (what the printer asks of every instruction's names: classifying them
// per instruction was 58 M instructions of a 374,000-instruction round
// trip, docs/performance.md, "nineteenth session"). Never freed: their
// number grows only with orders never seen before, so by the size of the
// inputs.
const AttributeOrder::List* InternList(absl::Span<const char* const> names) {
  using List = AttributeOrder::List;
  // Found by the names' addresses (interned: equal names, equal addresses).
  struct ListHash {
    using is_transparent = void;
    size_t operator()(absl::Span<const char* const> l) const { return absl::HashOf(l); }
    size_t operator()(const List& l) const { return (*this)(Texts(&l)); }
  };
  struct ListEq {
    using is_transparent = void;
    static bool Same(const List& a, absl::Span<const char* const> b) {
      if (a.names.size() != b.size()) return false;
      for (size_t i = 0; i < b.size(); ++i) {
        if (a.names[i].text != b[i]) return false;
      }
      return true;
    }
    bool operator()(const List& a, absl::Span<const char* const> b) const { return Same(a, b); }
    bool operator()(absl::Span<const char* const> a, const List& b) const { return Same(b, a); }
    bool operator()(const List& a, const List& b) const { return Same(a, Texts(&b)); }
  };
  static std::mutex mutex;
  // node_hash_set: elements never move, so pointers to them stay valid.
  static auto* const pool = new absl::node_hash_set<List, ListHash, ListEq>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pool->find(names);
  if (it == pool->end()) {
    List list;
    for (const char* text : names) {
      const absl::string_view name(text);
      const text_attribute::Attr kind = text_attribute::Classify(name);
      if (kind != text_attribute::kNotCanonical) list.canonical |= uint32_t{1} << kind;
      list.names.push_back({text, static_cast<uint32_t>(name.size()), kind});
    }
    it = pool->insert(std::move(list)).first;
  }
  return &*it;
}

// This thread's steps `list + name -> list`: the parser appends a name per
// attribute it reads, almost always a step it has made before. Open
// addressing with linear probing, every step kept until the table is 3/4
// full (then it starts over): a step is interned once however the lists
// and names lie in memory, so the work does not depend on their addresses
// (a direct-mapped table missed on every use of two steps that shared a
// slot: 0 or 102,000 misses on the same input, 70 M instructions apart).
struct Step {
  const AttributeOrder::List* from;
  const char* name;
  const AttributeOrder::List* to;  // nullptr: an empty slot
};
constexpr size_t kStepSlots = 512;
struct StepTable {
  std::array<Step, kStepSlots> slots{};
  size_t used = 0;
};
thread_local StepTable steps;

size_t StepSlot(const AttributeOrder::List* from, const char* name) {
  uint64_t h = (reinterpret_cast<uintptr_t>(from) >> 3) * 0x9E3779B97F4A7C15ull ^
               reinterpret_cast<uintptr_t>(name);
  h *= 0xD6E8FEB86659FD93ull;
  return static_cast<size_t>(h >> 32) % kStepSlots;
}

}  // namespace

void AttributeOrder::Append(absl::string_view name) { AppendInterned(InternAttributeName(name).data()); }

void AttributeOrder::AppendInterned(const char* interned) {
  size_t slot = StepSlot(list_, interned);
  for (; steps.slots[slot].to != nullptr; slot = (slot + 1) % kStepSlots) {
    const Step& step = steps.slots[slot];
    if (step.from == list_ && step.name == interned) {
      list_ = step.to;
      return;
    }
  }
  std::vector<const char*> names = Texts(list_);
  names.push_back(interned);
  const List* to = InternList(names);
  if (steps.used == kStepSlots / 4 * 3) {
    steps = StepTable();
    slot = StepSlot(list_, interned);
  }
  steps.slots[slot] = Step{list_, interned, to};
  ++steps.used;
  list_ = to;
}

void AttributeOrder::Erase(size_t i) {
  std::vector<const char*> names = Texts(list_);
  names.erase(names.begin() + static_cast<std::ptrdiff_t>(i));
  list_ = names.empty() ? nullptr : InternList(names);
}

}  // namespace hilo
