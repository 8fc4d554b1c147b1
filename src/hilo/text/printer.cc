#include "hilo/text/printer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "hilo/ir/attribute_kind.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/text_form.h"
#include "hilo/text/char_class.h"
#include "hilo/text/text_flags.h"

namespace hilo {
namespace {

// The most characters an int64_t takes: "-9223372036854775808".
constexpr ptrdiff_t kMaxIntDigits = 20;

// Writes `v` in decimal at `at`, which has room for kMaxIntDigits; returns
// the end. Both writers' integers go through here.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline char* AppendIntDigits(int64_t v, char* at) {
  // Most integers printed (layout dimensions, indices, device ids) are
  // below 100.
  if (static_cast<uint64_t>(v) < 100) {
    if (v >= 10) *at++ = static_cast<char>('0' + v / 10);
    *at++ = static_cast<char>('0' + v % 10);
    return at;
  }
  // Dimension sizes are mostly below 10,000 (128, 4096).
  if (static_cast<uint64_t>(v) < 10000) {
    const unsigned u = static_cast<unsigned>(v);
    if (u >= 1000) *at++ = static_cast<char>('0' + u / 1000);
    *at++ = static_cast<char>('0' + u / 100 % 10);
    *at++ = static_cast<char>('0' + u / 10 % 10);
    *at++ = static_cast<char>('0' + u % 10);
    return at;
  }
  return std::to_chars(at, at + kMaxIntDigits, v).ptr;
}

// Writes into a fixed array; `overflowed()` when the text did not fit (what
// was written is then incomplete). For texts the printer keeps to reuse.
class FixedTextOut {
 public:
  FixedTextOut(char* buffer, size_t capacity) : buffer_(buffer), capacity_(capacity) {}
  void Push(char c) { Append(absl::string_view(&c, 1)); }
  void Append(absl::string_view s) {
    if (s.size() > capacity_ - size_) {
      overflowed_ = true;
      return;
    }
    std::memcpy(buffer_ + size_, s.data(), s.size());
    size_ += s.size();
  }
  void AppendInt(int64_t v) {
    char digits[kMaxIntDigits];
    Append(absl::string_view(digits, AppendIntDigits(v, digits) - digits));
  }
  size_t size() const { return size_; }
  bool overflowed() const { return overflowed_; }

 private:
  char* buffer_;
  size_t capacity_;
  size_t size_ = 0;
  bool overflowed_ = false;
};

// The text of the instruction shapes a module print wrote lately, by the
// Shape object's address and whether the layout was printed. Instructions
// share their shape objects (SharedShape: a module has few distinct
// shapes), and writing one dimension by dimension was a tenth of a round
// trip (docs/performance.md, "fourteenth session: round trip"). Two-way set
// associative, 512 entries of 64 bytes: a fixed 32 KB whatever the module.
// Valid only while no shape it saw is destroyed or changed: one module
// print, which changes nothing. `HILO_PRINT_SHAPE_CACHE=0` turns it off.
class ShapeTextCache {
 public:
  template <typename Out>
  void Write(const Shape& shape, bool print_layout, Out& out) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(&shape) | (print_layout ? 1 : 0);
    Entry* set = &entries_[(key * 0x9E3779B97F4A7C15ull >> 56) * 2];
    Entry* hit = set[0].key == key ? &set[0] : set[1].key == key ? &set[1] : nullptr;
    if (hit == nullptr) {
      // The older way goes; the newer moves over.
      set[1] = set[0];
      hit = &set[0];
      hit->key = key;
      FixedTextOut text(hit->text, sizeof(hit->text));
      WriteShape(shape, print_layout, /*index_comments=*/true, text);
      hit->size = text.overflowed() ? kTooLong : static_cast<uint8_t>(text.size());
    }
    if (hit->size == kTooLong) {
      WriteShape(shape, print_layout, /*index_comments=*/true, out);
    } else {
      out.Append(absl::string_view(hit->text, hit->size));
    }
  }

 private:
  static constexpr uint8_t kTooLong = 0xff;
  struct Entry {
    uintptr_t key = 0;  // the shape's address, or'ed with 1 when the layout is printed
    uint8_t size = 0;   // of text, or kTooLong: written each time
    char text[55];
  };
  static_assert(sizeof(Entry) == 64);
  Entry entries_[512];
};

// The printer's output: a fixed buffer drained into an OutputSink whenever
// it is full. Appends are a bounds check and a copy (no std::string growth
// checks, no temporaries); the first sink error is kept and everything after
// it is dropped.
class Writer {
 public:
  Writer(OutputSink* sink, char* buffer, size_t size)
      : sink_(sink), begin_(buffer), pos_(buffer), end_(buffer + size) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  ABSL_ATTRIBUTE_ALWAYS_INLINE void Append(absl::string_view s) {
    if (ABSL_PREDICT_TRUE(s.size() <= static_cast<size_t>(end_ - pos_))) {
      Copy(pos_, s);
      pos_ += s.size();
    } else {
      AppendSlow(s);
    }
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Push(char c) {
    if (ABSL_PREDICT_FALSE(pos_ == end_)) Flush();
    *pos_++ = c;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void AppendInt(int64_t v) {
    if (ABSL_PREDICT_FALSE(end_ - pos_ < kMaxIntDigits)) {
      // Near the buffer's end only: byte by byte (the digits are at most 20).
      char digits[kMaxIntDigits];
      for (const char* end = AppendIntDigits(v, digits), *d = digits; d != end; ++d) Push(*d);
      return;
    }
    pos_ = AppendIntDigits(v, pos_);
  }

  // `, name=`, which starts each attribute: one bounds check where three
  // appends took three (they were a quarter of AppendAttribute).
  ABSL_ATTRIBUTE_ALWAYS_INLINE void AppendAttributeStart(absl::string_view name) {
    if (ABSL_PREDICT_TRUE(name.size() + 3 <= static_cast<size_t>(end_ - pos_))) {
      pos_[0] = ',';
      pos_[1] = ' ';
      Copy(pos_ + 2, name);
      pos_[name.size() + 2] = '=';
      pos_ += name.size() + 3;
    } else {
      Append(", ");
      Append(name);
      Push('=');
    }
  }

  // Sends the buffered text to the sink.
  void Flush() {
    if (pos_ != begin_) Send(absl::string_view(begin_, pos_ - begin_));
    pos_ = begin_;
  }
  bool failed() const { return !status_.ok(); }
  // Flushes; the first sink error, if any.
  absl::Status Finish() {
    Flush();
    return status_;
  }

  // The text of explicit replica groups printed lately with the same
  // (shared) contents, or nullptr. A module's collectives share a few group
  // lists (the parser shares equal ones), and printing them number by
  // number was about 3% of a round trip.
  const std::string* CachedGroupsText(const ReplicaGroups& groups) const {
    for (const auto& [cached, text] : groups_texts_) {
      if (cached.SharesContentsWith(groups)) return &text;
    }
    return nullptr;
  }
  // An instruction's shape, from the module print's cache when it has one.
  void AppendInstructionShape(const Shape& shape, bool print_layout) {
    if (shape_texts_ != nullptr) {
      shape_texts_->Write(shape, print_layout, *this);
    } else {
      WriteShape(shape, print_layout, /*index_comments=*/true, *this);
    }
  }
  void set_shape_texts(ShapeTextCache* cache) { shape_texts_ = cache; }
  // Whether attribute groups an instruction lacks are skipped
  // (MaybeSetAttributes).
  bool group_test() const { return group_test_; }
  void set_group_test(bool on) { group_test_ = on; }

  void CacheGroupsText(const ReplicaGroups& groups, std::string text) {
    static constexpr size_t kEntries = 4;
    if (groups_texts_.size() < kEntries) {
      groups_texts_.emplace_back(groups, std::move(text));
    } else {
      groups_texts_[next_groups_text_] = {groups, std::move(text)};
      next_groups_text_ = (next_groups_text_ + 1) % kEntries;
    }
  }

 private:
  // Copies `s` to `to`. Most pieces (names, a shape's text) are at most 32
  // bytes: those are copied inline by two overlapping loads and stores of
  // one width, within `s` (a call to memcpy cost more than such a copy).
  ABSL_ATTRIBUTE_ALWAYS_INLINE static void Copy(char* to, absl::string_view s) {
    const char* from = s.data();
    const size_t n = s.size();
    auto two = [&](auto word) {
      decltype(word) head, tail;
      std::memcpy(&head, from, sizeof(head));
      std::memcpy(&tail, from + n - sizeof(tail), sizeof(tail));
      std::memcpy(to, &head, sizeof(head));
      std::memcpy(to + n - sizeof(tail), &tail, sizeof(tail));
    };
    struct Block {
      uint64_t a, b;
    };
    if (n >= 16) {
      if (ABSL_PREDICT_FALSE(n > 32)) {
        std::memcpy(to, from, n);
      } else {
        two(Block{});
      }
    } else if (n >= 8) {
      two(uint64_t{});
    } else if (n >= 4) {
      two(uint32_t{});
    } else if (n > 0) {
      to[0] = from[0];
      to[n / 2] = from[n / 2];
      to[n - 1] = from[n - 1];
    }
  }
  void AppendSlow(absl::string_view s) {
    Flush();
    if (s.size() >= static_cast<size_t>(end_ - begin_)) {
      Send(s);  // larger than the buffer: straight to the sink
      return;
    }
    std::memcpy(pos_, s.data(), s.size());
    pos_ += s.size();
  }
  void Send(absl::string_view s) {
    if (status_.ok()) status_ = sink_->Write(s);
  }

  OutputSink* sink_;
  char* begin_;
  char* pos_;
  char* end_;
  absl::Status status_;
  std::vector<std::pair<ReplicaGroups, std::string>> groups_texts_;
  size_t next_groups_text_ = 0;
  ShapeTextCache* shape_texts_ = nullptr;
  bool group_test_ = true;
};

class StringSink final : public OutputSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  absl::Status Write(absl::string_view text) override {
    out_->append(text.data(), text.size());
    return absl::OkStatus();
  }

 private:
  std::string* out_;
};

// Runs `print` on a Writer whose text is appended to a new string (the
// string-returning entry points for one instruction or signature).
template <typename Print>
std::string PrintToString(Print print) {
  std::string out;
  StringSink sink(&out);
  char buffer[4096];
  Writer w(&sink, buffer, sizeof(buffer));
  print(w);
  w.Flush();  // a StringSink does not fail
  return out;
}

// XLA's default style for objects that were not parsed.
constexpr uint32_t kDefaultStyle =
    kTextFlagsSet | kTextPercentName | kTextOperandShapes | kTextPercentOperands |
    kTextPercentCalls | kTextPercentControl | kTextOperandIndexComments;

uint32_t ModuleStyle(const HloModule* module) {
  if (module == nullptr) return kDefaultStyle;
  uint32_t f = module->text_info().flags;
  return (f & kTextFlagsSet) ? f : kDefaultStyle;
}

uint32_t InstructionStyle(const HloInstruction& inst) {
  uint32_t f = inst.text_flags();
  if (f & kTextFlagsSet) return f;
  const HloModule* module = inst.parent() != nullptr ? inst.parent()->parent() : nullptr;
  return ModuleStyle(module) & ~(kTextAsyncSugar | (0xffu << kTextSugarOpcodeShift));
}

// `"s"` with C escapes. Almost every string is plain printable ASCII, which
// absl::CEscape returns unchanged: that case skips the temporary.
// Whether `s` has a byte absl::CEscape changes (kNeedsCEscape). Sixteen
// bytes at a time where SSE2 is available (all of x86-64), the last block
// overlapping the one before: a folded module prints a backend_config per
// custom call, and the byte loop was ~6 instructions a byte.
// HILO_PRINT_QUOTED_SIMD=0: the byte loop only (the switch of this saving,
// docs/performance.md).
bool NeedsCEscape(absl::string_view s) {
  const char* data = s.data();
  const size_t size = s.size();
#if defined(__SSE2__)
  static const bool simd = !EnvSwitchIsZero("HILO_PRINT_QUOTED_SIMD");
  if (simd && size >= 16) {
    auto block = [](const char* p) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Signed bytes: below 0x20 are the controls and 0x80-0xff.
      __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                 _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
      bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
      bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('\'')));
      bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
      return _mm_movemask_epi8(bad) != 0;
    };
    size_t i = 0;
    for (; i + 16 <= size; i += 16) {
      if (block(data + i)) return true;
    }
    return i < size && block(data + size - 16);
  }
#endif
  bool escape = false;
  for (size_t i = 0; i < size; ++i) escape |= kNeedsCEscape[static_cast<unsigned char>(data[i])];
  return escape;
}

void AppendQuoted(absl::string_view s, Writer& w) {
  w.Push('"');
  const bool escape = NeedsCEscape(s);
  if (!escape) {
    w.Append(s);
  } else {
    w.Append(absl::CEscape(s));
  }
  w.Push('"');
}

// WriteReplicaGroups, with the text of explicit groups cached (see
// Writer::CachedGroupsText).
void AppendReplicaGroups(const ReplicaGroups& groups, Writer& w) {
  if (groups.form() != ReplicaGroups::Form::kExplicit || groups.empty()) {
    WriteReplicaGroups(groups, w);
    return;
  }
  if (const std::string* text = w.CachedGroupsText(groups)) {
    w.Append(*text);
    return;
  }
  std::string text = PrintToString([&](Writer& t) { WriteExplicitReplicaGroups(groups, t); });
  w.Append(text);
  w.CacheGroupsText(groups, std::move(text));
}

void AppendComputationName(const HloComputation* c, bool percent, Writer& w) {
  if (percent) w.Push('%');
  w.Append(c->name());
}

using namespace text_attribute;  // NOLINT: the attribute kinds, as printer.cc's own

// Works for attribute and header orders of any string-like element type.
template <typename Names>
bool Listed(const Names& order, absl::string_view name) {
  for (const auto& s : order) {
    if (absl::string_view(s) == name) return true;
  }
  return false;
}

// Appends `, name=value` for attribute `name` (of kind `attr`) if the
// instruction has it set; returns false (appending nothing) otherwise.
// `written`: the name is in attribute_order(), which prints some attributes
// even at their default value.
bool AppendAttribute(const HloInstruction& inst, absl::string_view name, Attr attr, bool written,
                     uint32_t style, Writer& w) {
  auto begin = [&]() { w.AppendAttributeStart(name); };
  // A raw attribute is one the parser could not type (or does not know):
  // it is printed as written.
  if (!inst.raw_attributes().empty()) {
    if (const auto* raw = inst.raw_attribute(name)) {
      begin();
      w.Append(*raw);
      return true;
    }
  }
  switch (attr) {
    case kIndex:
      if (inst.opcode() == HloOpcode::kGetTupleElement && inst.tuple_index() >= 0) {
        begin();
        w.AppendInt(inst.tuple_index());
        return true;
      }
      break;  // may still name a called computation
    case kDimensions:
      if (inst.dimensions().has_value()) {
        begin();
        WriteIntList(*inst.dimensions(), w);
        return true;
      }
      return false;
    case kLhsBatchDims:
    case kRhsBatchDims:
    case kLhsContractingDims:
    case kRhsContractingDims: {
      const DotDimensionNumbers& dn = inst.dot_dimension_numbers();
      const auto& dims = attr == kLhsBatchDims         ? dn.lhs_batch_dimensions
                         : attr == kRhsBatchDims       ? dn.rhs_batch_dimensions
                         : attr == kLhsContractingDims ? dn.lhs_contracting_dimensions
                                                       : dn.rhs_contracting_dimensions;
      // Written explicitly (in attribute_order) even when empty; otherwise only when non-empty.
      if (!dims.empty() || written) {
        begin();
        WriteIntList(dims, w);
        return true;
      }
      return false;
    }
    case kReplicaGroups:
      if (inst.replica_groups().has_value()) {
        begin();
        AppendReplicaGroups(*inst.replica_groups(), w);
        return true;
      }
      return false;
    case kChannelId:
      if (inst.channel_id().has_value()) {
        begin();
        w.AppendInt(*inst.channel_id());
        return true;
      }
      return false;
    case kUseGlobalDeviceIds:
    case kConstrainLayout: {
      const std::optional<bool>& v =
          attr == kUseGlobalDeviceIds ? inst.use_global_device_ids() : inst.constrain_layout();
      if (v.has_value()) {
        begin();
        w.Append(*v ? "true" : "false");
        return true;
      }
      return false;
    }
    case kSourceTargetPairs:
      if (inst.source_target_pairs().has_value()) {
        begin();
        w.Push('{');
        bool first = true;
        for (const auto& [s, t] : *inst.source_target_pairs()) {
          if (!first) w.Push(',');
          first = false;
          w.Push('{');
          w.AppendInt(s);
          w.Push(',');
          w.AppendInt(t);
          w.Push('}');
        }
        w.Push('}');
        return true;
      }
      return false;
    case kCustomCallTarget:
      if (!inst.custom_call_target().empty() || written) {
        begin();
        AppendQuoted(inst.custom_call_target(), w);
        return true;
      }
      return false;
    case kApiVersion:
      if (inst.api_version() != 1 || written) {
        begin();
        w.Append(HloInstruction::ApiVersionName(inst.api_version()));
        return true;
      }
      return false;
    case kBackendConfig:
      if (inst.backend_config().has_value()) {
        begin();
        if (inst.backend_config_is_dict()) {
          w.Append(*inst.backend_config());
        } else {
          AppendQuoted(*inst.backend_config(), w);
        }
        return true;
      }
      break;  // may still name a called computation
    case kFrontendAttributes:
      if (!inst.frontend_attributes().empty() || written) {
        begin();
        w.Push('{');
        bool first = true;
        for (const auto& [k, v] : inst.frontend_attributes().entries()) {
          if (!first) w.Push(',');
          first = false;
          // A key that is not a plain identifier was written quoted.
          if (!k.empty() && IdentifierLength(k) == k.size()) {
            w.Append(k);
          } else {
            AppendQuoted(k, w);
          }
          w.Push('=');
          AppendQuoted(v, w);
        }
        w.Push('}');
        return true;
      }
      return false;
    case kMetadata:
      if (!inst.metadata().empty() || written) {
        begin();
        w.Push('{');
        w.Append(inst.metadata());
        w.Push('}');
        return true;
      }
      return false;
    case kSharding:
      if (!inst.sharding().empty()) {
        begin();
        w.Append(inst.sharding());
        return true;
      }
      return false;
    case kControlPredecessors:
      if (!inst.control_predecessors().empty()) {
        begin();
        w.Push('{');
        bool first = true;
        for (const HloInstruction* p : inst.control_predecessors()) {
          if (!first) w.Append(", ");
          first = false;
          if (style & kTextPercentControl) w.Push('%');
          w.Append(p->name());
        }
        w.Push('}');
        return true;
      }
      return false;
    default:
      break;
  }
  for (const CalledAttributeView& called : inst.called_computation_attributes()) {
    if (called.name != name) continue;
    begin();
    const bool percent = style & kTextPercentCalls;
    if (called.braced || called.computations.size() != 1) {
      w.Push('{');
      for (size_t i = 0; i < called.computations.size(); ++i) {
        if (i > 0) w.Append(", ");
        AppendComputationName(called.computations[i], percent, w);
      }
      w.Push('}');
    } else {
      AppendComputationName(called.computations[0], percent, w);
    }
    return true;
  }
  return false;
}

constexpr uint32_t Bit(Attr attr) { return uint32_t{1} << attr; }

// The canonical attributes AppendAttribute may print for `inst` when they
// are not in attribute_order() (a superset: AppendAttribute decides). Lets
// AppendAttributes skip the other two dozen names without a call each.
// `group_test`: skip the groups of attributes the instruction does not have
// (HloInstruction::attribute_groups) with one test each, instead of reading
// each of their attributes (HILO_PRINT_GROUP_TEST=0: read all).
uint32_t MaybeSetAttributes(const HloInstruction& inst, bool group_test) {
  uint32_t set = 0;
  if (inst.opcode() == HloOpcode::kGetTupleElement && inst.tuple_index() >= 0) set |= Bit(kIndex);
  if (inst.dimensions().has_value()) set |= Bit(kDimensions);
  if (!inst.metadata().empty()) set |= Bit(kMetadata);
  // The rest are in groups most instructions do not have.
  const uint32_t groups = group_test ? inst.attribute_groups() : ~uint32_t{0};
  if (groups & HloInstruction::kCollectiveGroup) {
    if (inst.channel_id().has_value()) set |= Bit(kChannelId);
    if (inst.replica_groups().has_value()) set |= Bit(kReplicaGroups);
    if (inst.constrain_layout().has_value()) set |= Bit(kConstrainLayout);
    if (inst.use_global_device_ids().has_value()) set |= Bit(kUseGlobalDeviceIds);
    if (inst.source_target_pairs().has_value()) set |= Bit(kSourceTargetPairs);
  }
  if (groups & HloInstruction::kDotGroup) {
    const DotDimensionNumbers& dn = inst.dot_dimension_numbers();
    if (!dn.lhs_batch_dimensions.empty()) set |= Bit(kLhsBatchDims);
    if (!dn.lhs_contracting_dimensions.empty()) set |= Bit(kLhsContractingDims);
    if (!dn.rhs_batch_dimensions.empty()) set |= Bit(kRhsBatchDims);
    if (!dn.rhs_contracting_dimensions.empty()) set |= Bit(kRhsContractingDims);
  }
  if ((groups & HloInstruction::kFrontendGroup) && !inst.frontend_attributes().empty()) {
    set |= Bit(kFrontendAttributes);
  }
  if (groups & HloInstruction::kRareGroup) {
    if (!inst.custom_call_target().empty()) set |= Bit(kCustomCallTarget);
    if (inst.api_version() != 1) set |= Bit(kApiVersion);
    if (!inst.sharding().empty()) set |= Bit(kSharding);
    if (!inst.control_predecessors().empty()) set |= Bit(kControlPredecessors);
    if (inst.backend_config().has_value()) set |= Bit(kBackendConfig);
  }
  // A called computation or a raw attribute can carry any canonical name.
  for (const CalledAttributeView& called : inst.called_computation_attributes()) {
    if (Attr attr = Classify(called.name); attr != kNotCanonical) set |= Bit(attr);
  }
  for (const RawAttribute& raw : inst.raw_attributes()) {
    if (Attr attr = Classify(raw.name); attr != kNotCanonical) set |= Bit(attr);
  }
  return set;
}

// Calls visit(name, attr, written, raw) for each attribute an instruction
// may print, in print order: those written in the text in their order, then
// the others that are set, in XLA's order. `raw` is set for a raw attribute
// of a name no other attribute has (printed as is); otherwise AppendAttribute
// decides whether (and how) the attribute is printed. The written names'
// kinds come with the instruction's interned list (AttributeOrder::Name),
// classified once when the list was interned.
// `group_test`: as MaybeSetAttributes's.
template <typename Visit>
void ForEachAttribute(const HloInstruction& inst, bool group_test, Visit visit) {
  const AttributeOrder& order = inst.attribute_order();
  for (const AttributeOrder::Name& name : order.names()) {
    visit(absl::string_view(name.text, name.size), name.kind, /*written=*/true, nullptr);
  }
  // Lowest bit first: the canonical order.
  for (uint32_t rest = MaybeSetAttributes(inst, group_test) & ~order.canonical(); rest != 0; rest &= rest - 1) {
    const auto attr = static_cast<Attr>(__builtin_ctz(rest));
    visit(kCanonicalOrder[attr], attr, /*written=*/false, nullptr);
  }
  for (const CalledAttributeView& called : inst.called_computation_attributes()) {
    if (Classify(called.name) == kNotCanonical && !Listed(order, called.name)) {
      visit(called.name, kNotCanonical, /*written=*/false, nullptr);
    }
  }
  for (const RawAttribute& raw : inst.raw_attributes()) {
    if (Classify(raw.name) == kNotCanonical && !Listed(order, raw.name)) {
      visit(raw.name, kNotCanonical, /*written=*/false, &raw);
    }
  }
}

void AppendAttributes(const HloInstruction& inst, uint32_t style, Writer& w) {
  ForEachAttribute(inst, w.group_test(), [&](absl::string_view name, Attr attr, bool written,
                             const RawAttribute* raw) {
    if (raw == nullptr) {
      AppendAttribute(inst, name, attr, written, style, w);
      return;
    }
    w.AppendAttributeStart(name);
    w.Append(raw->value);
  });
}

void AppendInstruction(const HloInstruction& inst, Writer& w) {
  const uint32_t style = InstructionStyle(inst);
  if (style & kTextPercentName) w.Push('%');
  w.Append(inst.name());
  w.Append(" = ");
  w.AppendInstructionShape(inst.shape(), /*print_layout=*/true);
  w.Push(' ');
  if (style & kTextAsyncSugar) {
    auto wrapped = static_cast<HloOpcode>((style >> kTextSugarOpcodeShift) & 0xff);
    w.Append(HloOpcodeString(wrapped));
    w.Append(inst.opcode() == HloOpcode::kAsyncStart    ? "-start"
             : inst.opcode() == HloOpcode::kAsyncUpdate ? "-update"
                                                        : "-done");
  } else {
    w.Append(HloOpcodeString(inst.opcode()));
  }
  w.Push('(');
  if (inst.opcode() == HloOpcode::kParameter) {
    w.AppendInt(inst.parameter_number());
  } else if (inst.opcode() == HloOpcode::kConstant) {
    w.Append(inst.literal_text());
  } else {
    for (int64_t i = 0; i < inst.operand_count(); ++i) {
      if (i > 0) {
        w.Append(", ");
        if (i % 5 == 0 && (style & kTextOperandIndexComments)) {
          w.Append("/*index=");
          w.AppendInt(i);
          w.Append("*/");
        }
      }
      const HloInstruction* operand = inst.operand(i);
      if (style & kTextOperandShapes) {
        w.AppendInstructionShape(operand->shape(), /*print_layout=*/true);
        w.Push(' ');
      }
      if (style & kTextPercentOperands) w.Push('%');
      w.Append(operand->name());
    }
  }
  w.Push(')');
  AppendAttributes(inst, style, w);
}

// The created instructions PrintOrder has placed. The module numbers
// instructions in order of addition, so a computation's created ones
// usually have unique ids in a short range: a slot each there, by id,
// instead of a hash set (15 M instructions of 17,000 placements on the
// looped-einsum replacer's output). The hash set alone when the ids are
// spread out, or with HILO_PRINT_ORDER_ID_MARKS=0 (the switch of this
// saving, measured in docs/performance.md); an instruction whose id slot
// another one holds (ids repeated by instructions moved in from another
// module) goes to the hash set too. Only created instructions of the
// computation are asked about, so every id is in [lo, hi].
class PlacedSet {
 public:
  PlacedSet(int64_t lo, int64_t hi, size_t count, bool by_id) {
    if (by_id && count > 0 && lo >= 0 && static_cast<uint64_t>(hi - lo) < 4 * count + 64) {
      owners_.assign(static_cast<size_t>(hi - lo) + 1, nullptr);
      lo_ = lo;
    }
  }
  // Marks `inst`; false if it was marked already.
  bool Insert(const HloInstruction* inst) {
    if (!owners_.empty()) {
      const HloInstruction*& owner = owners_[static_cast<size_t>(inst->unique_id() - lo_)];
      if (owner == inst) return false;
      if (owner == nullptr) {
        owner = inst;
        return true;
      }
    }
    return hashed_.insert(inst).second;
  }
  bool Contains(const HloInstruction* inst) const {
    if (!owners_.empty() && owners_[static_cast<size_t>(inst->unique_id() - lo_)] == inst) {
      return true;
    }
    return !hashed_.empty() && hashed_.contains(inst);
  }

 private:
  std::vector<const HloInstruction*> owners_;  // by unique id - lo_
  int64_t lo_ = 0;
  absl::flat_hash_set<const HloInstruction*> hashed_;
};

// The order instructions are printed in. Parsed instructions keep the
// order they were written in (so a parsed module prints back as written,
// forward references included). An instruction a pass created is appended
// to the instruction list, which would print it after `ROOT`; instead it
// is printed just before the first instruction that needs it (after its own
// pass-created operands), as XLA's post-order printing would place it. A
// created instruction nothing uses comes at the end. Iterative: no
// recursion on graph depth.
// Calls emit(instruction) in that order, walking the computation's own list
// (no copy of it: 8 bytes an instruction, at the printer's peak beside the
// verifier thread's tables); only the created instructions are gathered
// apart, by `place`.
template <typename Emit>
void ForEachInPrintOrder(const HloComputation& comp, Emit emit) {
  auto created = [](const HloInstruction* inst) { return !(inst->text_flags() & kTextFlagsSet); };
  const auto slots = comp.instruction_slots();
  // The first created instruction (std::find_if: the common case, none, is
  // one quick scan), then how many there are and their range of unique ids.
  const auto first = std::find_if(slots.begin(), slots.end(), [&](const auto& slot) {
    return slot != nullptr && created(slot);
  });
  // The computation's instructions in list order, walked in place (the
  // computation does not change while it is printed).
  auto list = [&](auto visit) {
    for (HloInstruction* slot : slots) {
      if (slot != nullptr) visit(slot);
    }
  };
  if (first == slots.end()) {  // a parsed computation no pass added to
    list(emit);
    return;
  }
  // Which parsed instructions use a created one of this computation (an
  // operand or a control predecessor): found from the created side through
  // its users and control successors, which the IR keeps as the mirror of
  // those edges, and marked by list position. Only they can need anything
  // placed first, so the walk below asks the others nothing: on the
  // replacer's output, 17,000 marked of 357,000 parsed instead of every
  // parsed instruction's operands searched (HILO_PRINT_ORDER_BY_USERS=0:
  // every one searched; docs/performance.md, "printing a pass's output in
  // order").
  const bool by_users = !EnvSwitchIsZero("HILO_PRINT_ORDER_BY_USERS");
  std::vector<uint8_t> uses_created;
  if (by_users) uses_created.assign(slots.size(), 0);
  auto mark = [&](const HloInstruction* user) {
    if (!created(user) && user->parent() == &comp) {
      uses_created[static_cast<size_t>(user->index_in_parent())] = 1;
    }
  };
  // One walk of the created ones: how many, their range of unique ids, and
  // the marks above.
  size_t created_count = 0;
  int64_t lo = (*first)->unique_id();
  int64_t hi = lo;
  for (auto it = first; it != slots.end(); ++it) {
    if (*it == nullptr || !created(*it)) continue;
    ++created_count;
    lo = std::min(lo, (*it)->unique_id());
    hi = std::max(hi, (*it)->unique_id());
    if (!by_users) continue;
    for (const HloInstruction* user : (*it)->users()) mark(user);
    for (const HloInstruction* succ : (*it)->control_successors()) mark(succ);
  }
  // Only created instructions are pushed as dependencies, so a parsed one is
  // placed exactly once, by the first loop below: the set holds the created
  // ones only (on a module a pass added to, a small part of it).
  PlacedSet placed(lo, hi, created_count, !EnvSwitchIsZero("HILO_PRINT_ORDER_ID_MARKS"));
  std::vector<std::pair<HloInstruction*, size_t>> stack;  // (instruction, next edge)
  auto place = [&](HloInstruction* start) {
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      const size_t operands = inst->operands().size();
      const size_t edges = operands + inst->control_predecessors().size();
      if (next < edges) {
        HloInstruction* dep = next < operands ? inst->operands()[next]
                                              : inst->control_predecessors()[next - operands];
        ++next;
        if (created(dep) && dep->parent() == &comp && placed.Insert(dep)) {
          stack.push_back({dep, 0});
        }
        continue;
      }
      emit(inst);
      stack.pop_back();
    }
  };
  // Whether `dep` is a created instruction of this computation not placed
  // yet: one that must come first.
  auto pending = [&](const HloInstruction* dep) {
    return created(dep) && dep->parent() == &comp && !placed.Contains(dep);
  };
  list([&](HloInstruction* inst) {
    if (created(inst)) return;
    // Most parsed instructions need nothing placed before them.
    if ((by_users && uses_created[static_cast<size_t>(inst->index_in_parent())] == 0) ||
        (std::none_of(inst->operands().begin(), inst->operands().end(), pending) &&
         std::none_of(inst->control_predecessors().begin(), inst->control_predecessors().end(),
                      pending))) {
      emit(inst);
    } else {
      place(inst);
    }
  });
  // The created ones nothing placed yet: none is listed before `first`.
  for (auto it = first; it != slots.end(); ++it) {
    if (*it != nullptr && created(*it) && placed.Insert(*it)) place(*it);
  }
}

void AppendSignature(const HloComputation& comp, Writer& w) {
  w.Push('(');
  bool first = true;
  for (const HloInstruction* p : comp.parameter_instructions()) {
    if (p == nullptr || p->parent() == nullptr) continue;
    if (!first) w.Append(", ");
    first = false;
    w.Append(p->name());
    w.Append(": ");
    w.AppendInstructionShape(p->shape(), /*print_layout=*/false);
  }
  w.Append(") -> ");
  if (comp.root_instruction() != nullptr) {
    w.AppendInstructionShape(comp.root_instruction()->shape(), /*print_layout=*/false);
  }
}

void AppendComputation(const HloComputation& comp, Writer& w) {
  uint32_t flags = comp.text_info().flags;
  if (!(flags & kTextFlagsSet)) flags = ModuleStyle(comp.parent());
  if (comp.IsEntryComputation()) w.Append("ENTRY ");
  if (flags & kTextPercentName) w.Push('%');
  w.Append(comp.name());
  if (comp.text_info().has_signature) {
    // The signature is derived from the computation, as XLA does, so it
    // stays right after a pass changes parameters or the root; the written
    // one is kept while it still describes the same computation.
    w.Push(' ');
    if (!comp.written_signature().empty() &&
        ComputationSignatureIs(comp, comp.canonical_signature())) {
      w.Append(comp.written_signature());
    } else {
      AppendSignature(comp, w);
    }
  }
  w.Append(" {\n");
  const HloInstruction* root = comp.root_instruction();
  // Once the sink failed, the lines left are skipped.
  ForEachInPrintOrder(comp, [&](const HloInstruction* inst) {
    if (ABSL_PREDICT_FALSE(w.failed())) return;
    w.Append(inst == root ? "  ROOT " : "  ");
    AppendInstruction(*inst, w);
    w.Push('\n');
  });
  if (w.failed()) return;
  w.Push('}');
  if (!comp.execution_thread().empty()) {
    w.Append(", execution_thread=");
    AppendQuoted(comp.execution_thread(), w);
  }
  if (comp.text_info().flags & kTextClosingNameComment) {
    w.Append(" // ");
    w.Append(comp.name());
  }
}

void AppendModule(const HloModule& module, Writer& w) {
  if (module.has_header()) {
    w.Append("HloModule ");
    w.Append(module.name());
    if (module.text_info().flags & kTextHeaderColon) w.Push(':');
    auto append_header = [&](absl::string_view name) {
      if (name == "replica_count") {
        if (module.replica_count().has_value()) {
          w.Append(", replica_count=");
          w.AppendInt(*module.replica_count());
        }
      } else if (name == "num_partitions") {
        if (module.num_partitions().has_value()) {
          w.Append(", num_partitions=");
          w.AppendInt(*module.num_partitions());
        }
      } else if (const auto* v = module.header_attribute(name)) {
        w.AppendAttributeStart(name);
        w.Append(*v);
      }
    };
    const auto& order = module.header_order();
    for (const auto& name : order) append_header(name);
    for (const HeaderAttribute& attr : module.header_attributes()) {
      if (!Listed(order, attr.name)) append_header(attr.name);
    }
    if (!Listed(order, "replica_count")) append_header("replica_count");
    if (!Listed(order, "num_partitions")) append_header("num_partitions");
    w.Append("\n\n");
  }
  if (!module.text_info().stack_frames.empty()) {
    w.Append(module.text_info().stack_frames);
    w.Append("\n\n\n");
  }
  // The module's own list, not a copy of it: 0.8 MB for 100,000
  // computations, at many small computations' peak (the parse's memory is
  // still held when printing starts; docs/performance.md, "twenty-eighth
  // session", rss-many). HILO_PRINT_LIST_IN_PLACE=0 prints from a copy.
  static const bool print_from_copy = EnvSwitchIsZero("HILO_PRINT_LIST_IN_PLACE");
  bool first = true;
  auto append = [&](const HloComputation* comp) {
    if (w.failed()) return false;
    if (!first) w.Append("\n\n");
    first = false;
    AppendComputation(*comp, w);
    return true;
  };
  if (print_from_copy) {
    for (const HloComputation* comp : module.computations()) {
      if (!append(comp)) return;
    }
  } else {
    for (const std::unique_ptr<HloComputation>& comp : module.computation_slots()) {
      if (!append(comp.get())) return;
    }
  }
  w.Push('\n');
}

}  // namespace

std::string ComputationSignature(const HloComputation& comp) {
  return PrintToString([&](Writer& w) { AppendSignature(comp, w); });
}

bool ComputationSignatureIs(const HloComputation& comp, absl::string_view text) {
  // Compares piece by piece as the writer flushes; stops at the first
  // difference (the sink's error ends the printing).
  class MatchSink : public OutputSink {
   public:
    explicit MatchSink(absl::string_view expected) : rest_(expected) {}
    absl::Status Write(absl::string_view piece) override {
      if (!absl::StartsWith(rest_, piece)) return absl::CancelledError();
      rest_.remove_prefix(piece.size());
      return absl::OkStatus();
    }
    bool AllMatched() const { return rest_.empty(); }

   private:
    absl::string_view rest_;
  };
  MatchSink sink(text);
  char buffer[1024];
  Writer w(&sink, buffer, sizeof(buffer));
  AppendSignature(comp, w);
  return w.Finish().ok() && sink.AllMatched();
}

absl::Status PrintHloModule(const HloModule& module, OutputSink& sink) {
  // Not zero-initialized: only the part written is touched.
  std::unique_ptr<char[]> buffer(new char[kPrintBufferSize]);
  Writer w(&sink, buffer.get(), kPrintBufferSize);
  std::unique_ptr<ShapeTextCache> shape_texts;
  if (!EnvSwitchIsZero("HILO_PRINT_SHAPE_CACHE")) {
    shape_texts = std::make_unique<ShapeTextCache>();
    w.set_shape_texts(shape_texts.get());
  }
  w.set_group_test(!EnvSwitchIsZero("HILO_PRINT_GROUP_TEST"));
  AppendModule(module, w);
  return w.Finish();
}

void AppendHloModule(const HloModule& module, std::string* out) {
  out->reserve(out->size() + static_cast<size_t>(module.instruction_count()) * 96);
  StringSink sink(out);
  PrintHloModule(module, sink).IgnoreError();  // a StringSink does not fail
}

std::string PrintHloModule(const HloModule& module) {
  std::string out;
  AppendHloModule(module, &out);
  return out;
}

std::string PrintHloInstruction(const HloInstruction& instruction) {
  return PrintToString([&](Writer& w) { AppendInstruction(instruction, w); });
}

std::vector<std::pair<std::string, std::string>> PrintHloAttributes(
    const HloInstruction& instruction) {
  std::vector<std::pair<std::string, std::string>> attributes;
  const uint32_t style = InstructionStyle(instruction);
  ForEachAttribute(instruction, /*group_test=*/true, [&](absl::string_view name, Attr attr, bool written,
                                    const RawAttribute* raw) {
    if (raw != nullptr) {
      attributes.emplace_back(std::string(name), raw->value);
      return;
    }
    std::string text = PrintToString(
        [&](Writer& w) { AppendAttribute(instruction, name, attr, written, style, w); });
    if (text.empty()) return;  // not set: not printed
    text.erase(0, name.size() + 3);  // ", name="
    attributes.emplace_back(std::string(name), std::move(text));
  });
  return attributes;
}

std::vector<absl::string_view> PrintedAttributeNames(const HloInstruction& instruction) {
  std::vector<absl::string_view> names;
  const uint32_t style = InstructionStyle(instruction);
  PrintToString([&](Writer& w) {
    ForEachAttribute(instruction, /*group_test=*/true, [&](absl::string_view name, Attr attr, bool written,
                                      const RawAttribute* raw) {
      if (raw != nullptr || AppendAttribute(instruction, name, attr, written, style, w)) {
        names.push_back(name);
      }
    });
  });
  return names;
}

}  // namespace hilo
