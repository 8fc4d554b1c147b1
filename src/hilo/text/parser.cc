#include "hilo/text/parser.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>


#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hilo/ir/attribute_kind.h"
#include "hilo/ir/attribute_names.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/instruction_name_index.h"
#include "hilo/ir/name_hash.h"
#include "hilo/text/char_class.h"
#include "hilo/text/input_check.h"
#include "hilo/text/literal_text.h"
#include "hilo/text/printer.h"
#include "hilo/text/source_location.h"
#include "hilo/text/text_flags.h"

namespace hilo {
namespace {

using namespace text_attribute;  // NOLINT: the attribute kinds, as parser.cc's own

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The interned name of each typed attribute, interned once: appending it to
// an instruction's attribute order then skips the lookup by text (3.4% of a
// round trip was interning names the parser had already classified).
const char* InternedName(Attr kind) {
  static const auto* const names = [] {
    auto* n = new std::array<const char*, kAttrCount>();
    for (int attr = 0; attr < kAttrCount; ++attr) {
      (*n)[attr] = InternAttributeName(kCanonicalOrder[attr]).data();
    }
    return n;
  }();
  return (*names)[kind];
}
bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// An operand reference waiting for the end of its computation, when every
// name of the computation is known (XLA allows any order).
struct PendingOperand {
  HloInstruction* user;
  absl::string_view name;
  size_t pos;
  int64_t declared_shape_index;  // into Parser::cur_.declared_shapes, or -1
  HloInstruction* direct;        // a nested instruction (`s32[] constant(0)` as an operand)
  absl::string_view gte_indices; // compact get-tuple-element suffix `#0#1`, or empty
};
// For shape inference: the pending_calls_ entries of each instruction whose
// shape is omitted, by index.
using PendingCallIndex = absl::flat_hash_map<const HloInstruction*, std::vector<size_t>>;
struct PendingControl {
  HloInstruction* successor;
  absl::string_view name;
  size_t pos;
};
// A computation named in a call attribute; `known` when it was already
// defined where it is named (the usual case), so that resolving it at the
// end does not read the name in the text again (hilo-opt may have dropped
// that part of the input from memory by then).
struct CalledName {
  absl::string_view name;
  size_t pos;
  HloComputation* known;
};
struct PendingCall {
  HloInstruction* inst;
  std::string attribute;
  // Inline for one name (a call's `to_apply`): no heap block per call.
  absl::InlinedVector<CalledName, 1> names;
  bool braced;
};

// Copies of input text for the names the parser resolves only later (at the
// end of a computation or of the module), so that resolving them does not
// read the input again: hilo-opt drops the input's pages behind the parse
// (ParseHloModule's `done_before`), and reading one of them back maps a
// whole large folio of the page cache again (on the generated 1,700-layer
// module, whose operands wait for the end of the entry computation after a
// forward reference, six such reads brought the whole 6.7 MB input back).
class TextCopies {
 public:
  absl::string_view Copy(absl::string_view text) {
    if (text.empty()) return {};
    if (text.size() > room_) {
      const size_t size = std::max(text.size(), kBlockSize);
      blocks_.push_back(std::make_unique<char[]>(size));
      next_ = blocks_.back().get();
      room_ = size;
    }
    std::memcpy(next_, text.data(), text.size());
    absl::string_view copy(next_, text.size());
    next_ += text.size();
    room_ -= text.size();
    return copy;
  }
  void Clear() {
    blocks_.clear();
    next_ = nullptr;
    room_ = 0;
  }

 private:
  static constexpr size_t kBlockSize = size_t{16} << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  size_t room_ = 0;
};

// Lists whose printing or lookup is linear per item (attributes of one
// instruction, header attributes, frontend attributes, control
// predecessors) are capped, so hostile input can not make them quadratic.
// Real modules have a few dozen at most.
constexpr size_t kMaxListedItems = 1000;

// Each level of inline computation (`to_apply={ ... }`) costs several large
// parser frames; 512 of them overflow an 8 MB stack under AddressSanitizer,
// so they have their own, smaller bound. XLA tests nest one or two.
constexpr int kMaxInlineComputationDepth = 64;

int ShapeDepth(const Shape& shape) {  // bounded: every parsed shape is
  int depth = 0;
  for (const Shape& s : shape.tuple_shapes()) depth = std::max(depth, ShapeDepth(s));
  return shape.IsTuple() ? depth + 1 : 0;
}

// Number of shapes in `shape` (itself included), counting stops past `cap`.
int64_t ShapeNodes(const Shape& shape, int64_t cap) {
  int64_t n = 1;
  for (const Shape& s : shape.tuple_shapes()) {
    n += ShapeNodes(s, cap - n);
    if (n > cap) break;
  }
  return n;
}

// HashName (hilo/ir/name_hash.h) hashes instruction names and, being
// cheap on short texts, the parser's other text keys.

// Comparison opcodes of 2018 XLA, before `compare(...), direction=`: the
// only legacy opcode names that still mean something. Empty if not one.
absl::string_view LegacyCompareDirection(absl::string_view opcode) {
  if (opcode == "equal-to") return "EQ";
  if (opcode == "not-equal-to") return "NE";
  if (opcode == "greater-than") return "GT";
  if (opcode == "greater-than-or-equal-to") return "GE";
  if (opcode == "less-than") return "LT";
  if (opcode == "less-than-or-equal-to") return "LE";
  return "";
}

class Parser {
 public:
  Parser(absl::string_view text, absl::string_view filename,
         const std::function<void(size_t)>* done_before = nullptr)
      : text_(text), filename_(filename), done_before_(done_before) {}

  absl::StatusOr<std::unique_ptr<HloModule>> Run();
  absl::StatusOr<std::vector<Shape>> RunShapeList();

 private:
  // --- Errors ---------------------------------------------------------------
  bool Fail(size_t pos, absl::string_view message);
  bool ok() const { return error_.ok(); }

  // --- Lexing ---------------------------------------------------------------
  // Whitespace and comments; false on an unterminated comment. Most calls
  // find a token right away, so that case is inline.
  bool SkipSpace() {
    const size_t size = text_.size();
    if (pos_ < size) {
      const char c = text_[pos_];
      if (c != '/' && kCharClass[static_cast<unsigned char>(c)] != kSpaceClass) return ok();
      // One space between two tokens, the usual case, without the call.
      if (c == ' ' && pos_ + 1 < size) {
        const char next = text_[pos_ + 1];
        if (next != '/' && kCharClass[static_cast<unsigned char>(next)] != kSpaceClass) {
          ++pos_;
          return ok();
        }
      }
    }
    return SkipSpaceSlow();
  }
  bool SkipSpaceSlow();
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Cur() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (!SkipSpace()) return false;
    if (Cur() != c) return false;
    ++pos_;
    return true;
  }
  bool Expect(char c, absl::string_view what);
  // As Expect, with the message's parts concatenated only on failure (these
  // calls are on the per-instruction path).
  template <typename... Parts>
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool ExpectOr(char c, const Parts&... what) {
    // Right here, the usual cases (`channel_id=`, `add(`, `x = `), without
    // the call.
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    // One space before it (`%name = ...`): what SkipSpace would skip.
    if (pos_ + 1 < text_.size() && text_[pos_] == ' ' && text_[pos_ + 1] == c) {
      pos_ += 2;
      return true;
    }
    return ExpectOrSlow(c, what...);
  }
  template <typename... Parts>
  bool ExpectOrSlow(char c, const Parts&... what) {
    if (!SkipSpace()) return false;
    if (Cur() == c) {
      ++pos_;
      return true;
    }
    return Expect(c, absl::StrCat(Capped(what)...));
  }
  // FormatErrorAt cuts a message at kMaxErrorMessageBytes; a part taken
  // from the input (a name, say) is cut to one byte more before it is
  // concatenated, so that a 100 MB name does not make a 100 MB temporary.
  static absl::string_view Capped(absl::string_view part) {
    return part.substr(0, kMaxErrorMessageBytes + 1);
  }
  static absl::string_view Capped(const std::string& part) { return Capped(absl::string_view(part)); }
  template <typename T>
  static const T& Capped(const T& part) {
    return part;
  }
  absl::string_view LexIdent();
  // Moves past `keyword` (`ENTRY`, `ROOT`) when it is the next identifier;
  // otherwise leaves the position alone.
  bool LexKeyword(absl::string_view keyword);
  bool LexName(absl::string_view* name, bool* percent, absl::string_view what);
  bool LexInt64(int64_t* value, absl::string_view what);
  // Scans an attribute value: balanced brackets and strings, up to a
  // top-level ',', whitespace or unmatched closer. Returns [start, end).
  bool ScanValue(absl::string_view* value);
  bool ScanValueFrom(size_t start, absl::string_view* value);
  // Scans from an opening bracket at pos_ to just after its matching closer.
  bool ScanBalanced(size_t* end);
  // The '"' that closes the string opened by the '"' at `open` (a backslash
  // escapes the next byte), or npos.
  size_t ClosingQuote(size_t open) const;

  // --- Lists ------------------------------------------------------------------
  // The loops behind every comma-separated list of the text, written once.
  // They are inlined into their callers (the per-instruction path).
  //
  // `item (',' item)*` up to `close` (the opener already read), then the
  // closer; an empty list is the closer alone. `item()` reads one item at
  // pos_ (spaces before it skipped) and returns false on an error.
  template <typename Item>
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool ParseCommaSeparated(char close, absl::string_view what,
                                                        Item item) {
    if (!SkipSpace()) return false;
    if (Cur() != close) {
      while (true) {
        if (!SkipSpace() || !item()) return false;
        if (!SkipSpace()) return false;
        if (Cur() != ',') break;
        ++pos_;
      }
    }
    // Spaces are skipped: the closer, or an error Expect words.
    if (Cur() == close) {
      ++pos_;
      return true;
    }
    return Expect(close, what);
  }
  // `(',' item)*`: an item after each comma, for as long as a comma follows
  // (the header's and an instruction's attributes). What follows the last
  // item, spaces included, is left unread.
  template <typename Item>
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool ParseCommaPrefixed(Item item) {
    while (true) {
      const size_t before = pos_;
      if (!SkipSpace()) return false;
      if (Cur() != ',') {
        pos_ = before;
        return true;
      }
      ++pos_;
      if (!item()) return false;
    }
  }
  // The same inside an attribute value already scanned: the items of
  // v[i, end), `base` being v's offset in the text. kComma: `item (',' item)*`
  // with spaces around items and a trailing ',' allowed, anything else
  // between items is `no_comma` (an error). kCommaOrSpace: items separated
  // by any run of commas and spaces (the lists of names). `item(&i)` reads
  // one item at v[i], leaves i after it, and returns false on an error.
  enum class Separator { kComma, kCommaOrSpace };
  template <typename Item>
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool ParseListIn(absl::string_view v, size_t base, size_t i,
                                                size_t end, Separator separator,
                                                absl::string_view no_comma, Item item) {
    const bool commas_skipped = separator == Separator::kCommaOrSpace;
    while (true) {
      while (i < end && (IsSpace(v[i]) || (commas_skipped && v[i] == ','))) ++i;
      if (i >= end) return true;
      if (!item(&i)) return false;
      if (commas_skipped) continue;
      while (i < end && IsSpace(v[i])) ++i;
      if (i >= end) return true;
      if (v[i] != ',') return Fail(base + i, no_comma);
      ++i;
    }
  }

  // --- Grammar ----------------------------------------------------------------
  bool ParseHeader();
  bool ParseStackFrames();
  bool ParseComputation();
  bool ParseInstruction(HloComputation* computation, bool* is_root, HloInstruction** out);
  // Shape (optional), opcode and operands of an instruction; adds it to
  // `comp`. Nested instructions in the operand list recurse, bounded.
  // `name_hash` is HashName(name) (unused for a nameless nested one).
  bool ParseInstructionBody(HloComputation* comp, absl::string_view name, size_t name_hash,
                            size_t name_pos,
                            uint32_t flags, Shape* preparsed_shape, int depth,
                            HloInstruction** out);
  bool ParseShape(Shape* shape, int depth, bool space_before_layout = true);
  // ParseShape(shape, 0) for an instruction's own shape, through shape_cache_.
  // `*kept_text`: the shape's text as a key of shape_cache_ (a copy that
  // outlives the input's pages), or empty when the shape is not cached.
  bool ParseDefinitionShape(SharedShape* shape, absl::string_view* kept_text);
  // The same when the shape's text is in shape_cache_: moves past it and
  // returns true. Otherwise returns false with the position unchanged and
  // `*end` where a cached text would end (text_.size() if it can not be
  // cached).
  bool TakeCachedShape(SharedShape* shape, absl::string_view* kept_text, size_t* end);
  // Where the array shape starting at `start` ends if it is followed by a
  // space: the next space within 256 bytes, else text_.size().
  size_t ArrayShapeTextEnd(size_t start) const;
  size_t ShapeTextEnd(size_t start) const;
  bool InferShape(HloInstruction* inst, size_t pos, const PendingCallIndex& calls);
  // The result shape of the computation `inst` calls by `attribute` (entry
  // `index` of a list), for shape inference; nullptr and `why` when it is
  // not known yet (defined later, or still being parsed).
  const Shape* CalledRootShape(const HloInstruction* inst, absl::string_view attribute,
                               size_t index, const PendingCallIndex& calls, std::string* why);
  // The same computation itself (its root is known).
  const HloComputation* CalledComputation(const HloInstruction* inst, absl::string_view attribute,
                                          size_t index, const PendingCallIndex& calls,
                                          std::string* why);
  bool NeedsShape(const HloInstruction* inst) const {
    return !cur_.needs_shape.empty() && inst->shape().IsTuple() && inst->shape().tuple_shapes_size() == 0;
  }
  // `*written_kinds`: bit k set once the instruction's attribute of kind k
  // (attribute_kind.h) is read.
  bool ParseAttribute(HloInstruction* inst, uint32_t* flags, uint32_t* written_kinds);
  bool ResolveComputation(HloComputation* computation, size_t open_pos);
  // A long computation's instruction list reserved from the text left
  // (ResolveComputation asks every kDoneStep bytes, once the list holds
  // kFirstListCheck instructions, then the count returned): a list that
  // doubles near the parse's end holds its old and its new block at once
  // when the process's memory peaks (100,000 small computations: the
  // entry's 100,002 calls grew from 98,304 slots, 0.8 MB; docs/
  // performance.md, "twenty-eighth session", rss-many).
  // HILO_PARSE_RESERVE_LIST=0 leaves the list to double.
  size_t ReserveInstructionList(HloComputation* computation, size_t parsed, size_t open_pos);
  // ReportProgress, then ReserveInstructionList when due (out of line: the
  // instruction loop stays as it was).
  [[gnu::noinline]] void ReportProgressIn(HloComputation* computation, size_t open_pos,
                                          size_t* next_list_check);
  static constexpr size_t kFirstListCheck = 4096;
  bool ResolveCalls();
  // Attaches the computations `call` names; false if one is not defined.
  bool AttachCall(PendingCall& call);
  // The calls `inst` added to pending_calls_ from `begin` on, when every
  // computation they name is defined already: attached now (in order, after any
  // inline ones, as ResolveCalls would attach them) and dropped from
  // pending_calls_, so that a module of many calls does not hold an entry
  // per call until its end.
  void AttachKnownCalls(HloInstruction* inst, size_t begin);

  // Typed attribute values, each parsed from the scanned value text.
  bool ParseIntList(absl::string_view v, size_t base, std::vector<int64_t>* out);
  bool ParseIntListList(absl::string_view v, size_t base, std::vector<std::vector<int64_t>>* out);
  bool ParseReplicaGroups(absl::string_view v, size_t base, ReplicaGroups* out);
  bool ParseBool(absl::string_view v, size_t base, bool* out);
  bool ParseString(absl::string_view v, size_t base, std::string* out);
  bool ParseFrontendAttributes(absl::string_view v, size_t base, FrontendAttributes* out);

  absl::string_view text_;
  absl::string_view filename_;
  // Told every kDoneStep bytes of progress (ParseHloModule in parser.h).
  const std::function<void(size_t)>* done_before_ = nullptr;
  // 140 KB: the text read but not dropped yet is part of the peak memory,
  // which a module of a few MB reaches at the end of its parse (with 1 MB
  // steps, up to 1 MB of it; docs/performance.md, "eleventh session"; 256 KB
  // -> 128 KB: mixtral and `hilo-gen -L 600` -120 KiB, "thirteenth session").
  // But each step must drop more than 33 whole 4 KB pages: x86 Linux
  // invalidates a smaller range page by page (tlb_single_page_flush_ceiling),
  // and under a paravirtualized hypervisor each invalidation traps, 15-25 us
  // a page; 128 KB steps (32 pages) cost 0.2-0.4 s of system time on the
  // 82 MB `-L 20000` module ("nineteenth session: system time").
  static constexpr size_t kDoneStep = size_t{140} << 10;
  size_t reported_done_ = 0;
  size_t reported_used_ = 0;  // the arena's used_bytes() then
  // Every kDoneStep bytes: tells done_before_, and the instruction arena
  // how much more the rest of the text will take at the rate so far
  // (InstructionArena::ExpectBytes: its last blocks in small pages).
  void ReportProgress();
  size_t pos_ = 0;
  absl::Status error_;
  std::unique_ptr<HloModule> module_;

  // Instruction names are unique in the module (XLA's rule), and an operand
  // names an instruction of its own computation. One module-wide set serves
  // both: it holds every instruction, found by its own name (so a slot is
  // one pointer: the set is the parser's largest structure), and the
  // instructions whose name the parser made up (`x.1` for a second `x`,
  // nameless nested instructions, compact get-tuple-elements) are also in
  // the computation's `generated` (ComputationState).
  // The module keeps the set as its name index (HloModule::EndBulkLoad).
  InstructionNameSet names_;
  // Instruction shapes repeat: the largest corpus module has 125 distinct
  // ones for 41,881 instructions, and parsing each was the parser's largest
  // cost (a sixth of a round trip). The text of an array shape, up to the
  // space after it, maps to the Shape parsed from it; bounded, so that a
  // module of all-different shapes only fills it once.
  struct ShapeTextHash {
    size_t operator()(absl::string_view text) const { return HashName(text); }
  };
  absl::flat_hash_map<absl::string_view, SharedShape, ShapeTextHash> shape_cache_;
  // The keys of shape_cache_: looking one up
  // reads no input.
  TextCopies cache_keys_;
  static constexpr size_t kShapeCacheLimit = 4096;
  void RecordShapeText(const HloInstruction* inst, absl::string_view shape_text);
  absl::flat_hash_map<std::string, int64_t> next_suffix_;
  // Replica groups and frontend attributes by their text: a module repeats
  // a handful of each, and finding a text costs less than reading it (the
  // same text gets the same, shared, groups). Keyed by the text's first 8
  // bytes (all of a shorter text), so that a value is looked up by the
  // bytes at its start before it is scanned for its end (FindKnownAt;
  // HILO_PARSE_KNOWN_FIRST=0: scanned first, then looked up by its whole
  // text); each key's texts are compared whole.
  template <typename T>
  class KnownValues {
   public:
    static constexpr size_t kKeyBytes = 8;
    static uint64_t Key(absl::string_view text) {
      uint64_t key = 0;
      std::memcpy(&key, text.data(), std::min(text.size(), kKeyBytes));
      return key;
    }
    // The value of `text`, or nullptr.
    const T* Find(absl::string_view text) const {
      auto it = by_key_.find(Key(text));
      if (it == by_key_.end()) return nullptr;
      for (const Known& known : it->second) {
        if (known.text == text) return &known.value;
      }
      return nullptr;
    }
    // The texts `rest` starts with (of at least kKeyBytes bytes).
    template <typename F>
    const T* FindPrefix(absl::string_view rest, F ends_at) const {
      if (rest.size() < kKeyBytes) return nullptr;
      auto it = by_key_.find(Key(rest));
      if (it == by_key_.end()) return nullptr;
      for (const Known& known : it->second) {
        if (absl::StartsWith(rest, known.text)) return ends_at(known.text.size()) ? &known.value : nullptr;
      }
      return nullptr;
    }
    // Up to kMaxTexts texts are kept (a module of all-different values
    // fills the table once, then reads the rest).
    void Add(absl::string_view text, const T& value) {
      if (count_ == kMaxTexts) return;
      ++count_;
      by_key_[Key(text)].push_back({std::string(text), value});
    }

   private:
    struct Known {
      std::string text;  // a copy: the input's pages are dropped behind the parse
      T value;
    };
    static constexpr size_t kMaxTexts = 4096;
    absl::flat_hash_map<uint64_t, std::vector<Known>> by_key_;
    size_t count_ = 0;
  };
  KnownValues<ReplicaGroups> known_groups_;
  KnownValues<FrontendAttributes> known_frontend_;
  // The known value whose text the value at pos_ is, found before the
  // value is scanned, with the value in `value` and pos_ after it; or
  // nullptr, with `value` either empty (pos_ unchanged) or the value
  // scanned. `failed`: that scan failed.
  template <typename T>
  const T* FindKnownAt(const KnownValues<T>& known, absl::string_view* value, bool* failed);
  // The instruction of `comp` written with `name`, or nullptr.
  HloInstruction* FindLocal(absl::string_view name, const HloComputation* comp) const;
  // A module-unique name derived from `hint` exactly as
  // HloModule::UniqueInstructionName derives it (`hint`, `hint.1`, ...).
  std::string UniqueName(absl::string_view hint);
  // Gives `inst` (written as `name`, empty if nameless) a module-unique name
  // and records it; false on a duplicate in the same computation.
  // `name_hash` is HashName(name) (unused if `name` is empty).
  bool RegisterName(absl::string_view name, size_t name_hash, size_t name_pos,
                    HloInstruction* inst, const HloComputation* comp);
  // At a declared operand shape (`f32[2]{0} %x`): when the operand is an
  // instruction of `comp` defined earlier with a shape written in exactly
  // the same bytes, moves past the shape and the name, sets `*name` and
  // `*name_pos` (where the name starts, at its '%' if it has one) and
  // returns that instruction; otherwise leaves the position alone and
  // returns nullptr (the caller then parses the shape). Never reports an
  // error.
  HloInstruction* SkipDefinedOperand(const HloComputation* comp, absl::string_view* name,
                                     size_t* name_pos);
  // What the computation being resolved has pending. An inline computation
  // (`to_apply={...}`) sets the enclosing one's aside as a whole.
  struct ComputationState {
    // Written names whose instruction was renamed because another
    // computation already used the name.
    absl::flat_hash_map<absl::string_view, HloInstruction*> renamed;
    std::vector<PendingOperand> pending_operands;
    // When the input is dropped behind the parse (done_before_), the names
    // of pending_operands before this index and of pending_control point
    // into operand_text (as do renamed's keys, always).
    size_t copied_operands = 0;
    TextCopies operand_text;
    // False once an instruction of the computation had to defer its
    // operands (a forward reference or a compact get-tuple-element).
    bool resolve_now = true;
    std::vector<PendingControl> pending_control;
    std::vector<Shape> declared_shapes;
    std::vector<std::pair<HloInstruction*, size_t>> needs_shape;  // shape omitted in the text
    // The computation's instructions whose name the parser made up. Only
    // this computation's: a name is looked up only among the instructions
    // of the computation being resolved (FindLocal, RegisterName), and a
    // module-wide set held one slot per renamed instruction to the parse's
    // end (4.6 MB on 100,000 small computations; docs/performance.md,
    // "seventeenth session").
    absl::flat_hash_set<const HloInstruction*> generated;
    // Where each instruction's shape was written, by unique id minus
    // `first_id` (the first recorded one's: the computation's instructions
    // get increasing ids as they are added): the address of the text (a
    // copy in shape_cache_'s keys, or, when the input is kept, the input)
    // shifted left 16 bits, or'ed with the size (0: not kept). An operand
    // whose declared shape is the same text is then checked by comparing
    // bytes instead of parsing the shape. Per computation for the same
    // reason as `generated` (by module-wide id: 3.4 MB there).
    std::vector<uint64_t> shape_spans;
    int64_t first_id = -1;
    // Empties it for the next computation, keeping the containers' memory.
    void Clear() {
      renamed.clear();
      pending_operands.clear();
      copied_operands = 0;
      operand_text.Clear();
      resolve_now = true;
      pending_control.clear();
      declared_shapes.clear();
      needs_shape.clear();
      generated.clear();
      shape_spans.clear();
      first_id = -1;
    }
  };
  ComputationState cur_;
  // Whether an operand with a written shape was read (RecordShapeText).
  bool operand_shape_seen_ = false;
  // The names of pending calls to computations not yet defined, when the
  // input is dropped behind the parse.
  TextCopies call_text_;
  std::vector<PendingCall> pending_calls_;
  bool seen_entry_ = false;
  bool quiet_ = false;  // Fail() records nothing (trying an optional form)
  int inline_depth_ = 0;
  bool style_set_ = false;
  int64_t last_operand_count_ = 0;  // of the instruction parsed last
  bool operand_style_set_ = false;
  bool index_style_set_ = false;
  bool calls_style_set_ = false;
};

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

bool Parser::Fail(size_t pos, absl::string_view message) {
  if (quiet_ || !error_.ok()) return false;  // the first error wins
  // Where only blanks follow (a truncated module, a cut --split-input-file
  // part), point just past the last token, on its line, rather than at the
  // blank line after it.
  size_t last = std::min(pos, text_.size());
  if (text_.find_first_not_of(" \t\r\n", last) == absl::string_view::npos) {
    while (last > 0 && absl::ascii_isspace(static_cast<unsigned char>(text_[last - 1]))) --last;
    pos = last;
  }
  error_ = absl::InvalidArgumentError(FormatErrorAt(filename_, text_, pos, message));
  return false;
}

// ---------------------------------------------------------------------------
// Lexing
// ---------------------------------------------------------------------------

bool Parser::SkipSpaceSlow() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      size_t end = text_.find('\n', pos_);
      pos_ = end == absl::string_view::npos ? text_.size() : end + 1;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      size_t end = text_.find("*/", pos_ + 2);
      if (end == absl::string_view::npos) return Fail(pos_, "unterminated /* comment");
      pos_ = end + 2;
    } else {
      break;
    }
  }
  return ok();
}

bool Parser::Expect(char c, absl::string_view what) {
  if (!SkipSpace()) return false;
  if (Cur() != c) {
    if (AtEnd()) {
      return Fail(pos_, absl::StrCat("unexpected end of input: expected '", std::string(1, c),
                                     "' ", Capped(what)));
    }
    return Fail(pos_, absl::StrCat("expected '", std::string(1, c), "' ", Capped(what)));
  }
  ++pos_;
  return true;
}

absl::string_view Parser::LexIdent() {
  const size_t start = pos_;
  const size_t size = text_.size();
  const char* data = text_.data();
  if (start >= size) return absl::string_view(data + size, 0);
  const size_t length = IdentifierLength(absl::string_view(data + start, size - start));
  pos_ = start + length;
  return absl::string_view(data + start, length);
}

bool Parser::LexKeyword(absl::string_view keyword) {
  const size_t save = pos_;
  if (LexIdent() == keyword) return true;
  pos_ = save;
  return false;
}

bool Parser::LexName(absl::string_view* name, bool* percent, absl::string_view what) {
  if (!SkipSpace()) return false;
  *percent = Cur() == '%';
  if (*percent) ++pos_;
  size_t start = pos_;
  *name = LexIdent();
  if (name->empty()) {
    if (AtEnd()) return Fail(start, absl::StrCat("unexpected end of input: expected ", what));
    return Fail(start, absl::StrCat("expected ", what));
  }
  return true;
}

bool Parser::LexInt64(int64_t* value, absl::string_view what) {
  if (!SkipSpace()) return false;
  const size_t start = pos_;
  const size_t size = text_.size();
  const char* data = text_.data();
  size_t i = start;
  const bool negative = i < size && data[i] == '-';
  if (negative) ++i;
  const size_t digits_start = i;
  uint64_t magnitude = 0;
  while (i < size && IsDigit(data[i])) {
    magnitude = magnitude * 10 + static_cast<uint64_t>(data[i] - '0');
    ++i;
  }
  pos_ = i;
  // Up to 18 digits cannot overflow; longer ones go through from_chars,
  // which reports the overflow.
  if (i > digits_start && i - digits_start <= 18) {
    *value = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    return true;
  }
  absl::string_view tok = text_.substr(start, pos_ - start);
  auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), *value);
  if (tok.empty() || ec == std::errc::invalid_argument || ptr != tok.data() + tok.size()) {
    return Fail(start, absl::StrCat("expected an integer ", what));
  }
  if (ec == std::errc::result_out_of_range) {
    return Fail(start, absl::StrCat("integer overflow: ", tok, " does not fit in 64 bits"));
  }
  return true;
}

size_t Parser::ClosingQuote(size_t open) const {
  const char* data = text_.data();
  const size_t size = text_.size();
  size_t from = open + 1;
  while (from < size) {
    const void* hit = std::memchr(data + from, '"', size - from);
    if (hit == nullptr) break;
    const size_t quote = static_cast<size_t>(static_cast<const char*>(hit) - data);
    // Escaped by an odd run of backslashes right before it. Each run is
    // counted once (a quote ends it), so the search stays linear.
    size_t backslashes = 0;
    while (quote - backslashes > open + 1 && data[quote - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return quote;
    from = quote + 1;
  }
  return absl::string_view::npos;
}

bool Parser::ScanBalanced(size_t* end) {
  char closers[kMaxNestingDepth];  // the closer each open bracket expects
  size_t open = 0;
  size_t from = pos_;
  const size_t size = text_.size();
  const char* data = text_.data();
  while (from < size) {
    // Most bytes are neither brackets nor quotes: the others are found
    // sixteen at a time, and visited in order.
    unsigned mask = BracketMask(text_.substr(from));
    size_t next = std::min(from + 16, size);
    for (; mask != 0; mask &= mask - 1) {
      const size_t i = from + static_cast<size_t>(__builtin_ctz(mask));
      const char c = data[i];
      if (c == '"') {
        const size_t j = ClosingQuote(i);
        if (j == absl::string_view::npos) return Fail(i, "unterminated string");
        next = j + 1;  // the rest of this block may be inside the string
        break;
      }
      if (c == '{' || c == '[' || c == '(') {
        if (open >= static_cast<size_t>(kMaxNestingDepth)) {
          return Fail(i, absl::StrCat("brackets nested more than ", kMaxNestingDepth, " deep"));
        }
        closers[open++] = c == '{' ? '}' : c == '[' ? ']' : ')';
      } else {
        if (open == 0 || closers[open - 1] != c) {
          return Fail(i, absl::StrCat("unbalanced brackets: unexpected '", std::string(1, c), "'"));
        }
        if (--open == 0) {
          *end = i + 1;
          return true;
        }
      }
    }
    from = next;
  }
  return Fail(pos_, absl::StrCat("unbalanced brackets: '", std::string(1, text_[pos_]),
                                 "' is never closed"));
}

bool Parser::ScanValue(absl::string_view* value) {
  if (!SkipSpace()) return false;
  return ScanValueFrom(pos_, value);
}

// ScanValue's loop, for a value that starts at `start` and was read up to
// pos_ (no bracket open).
bool Parser::ScanValueFrom(size_t start, absl::string_view* value) {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    // Most of a value's bytes are identifier characters (`1`, `add.bf16`):
    // none opens, continues or ends a value.
    if (IsIdentChar(c)) {
      ++pos_;
      continue;
    }
    if (c == '{' || c == '[' || c == '(' || c == '"') {
      size_t end;
      if (c == '"') {
        const size_t j = ClosingQuote(pos_);
        if (j == absl::string_view::npos) return Fail(pos_, "unterminated string");
        end = j + 1;
      } else if (!ScanBalanced(&end)) {
        return false;
      }
      pos_ = end;
      continue;
    }
    if (c == ' ' && pos_ > start) {
      // A value may continue after spaces with a '{' on the same line:
      // `replica_groups=mesh[a=2] {a}`, `literal=s32[2]{0} {1, 2}`.
      size_t look = pos_;
      while (look < text_.size() && text_[look] == ' ') ++look;
      if (look < text_.size() && text_[look] == '{') {
        pos_ = look;
        continue;
      }
    }
    if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '}' || c == ']' ||
        c == ')') {
      break;
    }
    ++pos_;
  }
  *value = text_.substr(start, pos_ - start);
  if (value->empty()) {
    if (AtEnd()) return Fail(pos_, "unexpected end of input: expected an attribute value");
    return Fail(pos_, "expected an attribute value");
  }
  return true;
}

// ---------------------------------------------------------------------------
// Module
// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<HloModule>> Parser::Run() {
  // NUL bytes and invalid UTF-8 are rejected up front, so that no later
  // stage has to think about them. The same sweep counts lines, which size
  // the name map and the arena.
  const InputCheck check = CheckInput(text_);
  if (check.problem != nullptr) {
    Fail(check.problem_offset, check.problem);
    return error_;
  }
  const size_t lines = check.lines;

  module_ = std::make_unique<HloModule>("");
  module_->BeginBulkLoad();  // RegisterName keeps instruction names unique
  // Sizing the name map once saves rehashing it as it grows, and sized
  // close to the names it saves memory (the table takes about 4/3 slots a
  // name: linear_probing.h). A line holds at most one name, and where lines
  // are long (32 bytes on average, as an instruction's are) nearly every
  // line is an instruction's. Where they are short, blank lines and braces
  // are a good part of them (100,000 computations of three instructions:
  // 700,006 lines, 400,002 names): there the names are counted, one " ="
  // each (`name = shape op(...)`), with no instruction taken to be shorter
  // than 16 bytes (a cap against text made of " ="). HILO_NAME_COUNT=0
  // sizes it from min(lines, bytes / 32), as before (docs/performance.md,
  // "name tables sized from the names").
  static const bool count_names = !EnvSwitchIsZero("HILO_NAME_COUNT");
  const size_t estimated_instructions = std::min(lines, text_.size() / 32);
  size_t names = estimated_instructions;
  if (count_names && lines > names) {
    names = std::min({lines, CountSpacedEquals(text_), text_.size() / 16});
  }
  // Where the text has bytes to spare per name (a generated layer's
  // instructions average ~190), the table takes up to 2 slots a name (half
  // full) while its 8-byte slots stay within 1/8 of the text's size: a pass
  // then adds names into short runs. Where names are dense (many small
  // computations, ~34 bytes a name) it stays 3/4 full, the memory bound's
  // (HILO_NAME_SLACK=0: always 3/4).
  names_.reserve(names, text_.size() / 64);
  // A large module's instructions go to huge pages from the first one.
  module_->instruction_arena().ExpectBytes(estimated_instructions * sizeof(HloInstruction));
  if (!SkipSpace()) return error_;
  {
    size_t save = pos_;
    absl::string_view word = LexIdent();
    pos_ = save;
    if (word == "HloModule") {
      if (!ParseHeader()) return error_;
    } else {
      module_->set_has_header(false);
    }
  }
  if (!ParseStackFrames()) return error_;
  while (true) {
    if (!SkipSpace()) return error_;
    if (AtEnd()) break;
    if (!ParseComputation()) return error_;
  }
  if (module_->computation_count() == 0) {
    Fail(pos_, "unexpected end of input: the module has no computation");
    return error_;
  }
  if (!ResolveCalls()) return error_;
  if (module_->entry_computation() == nullptr) {
    // XLA's rule: without ENTRY, the last computation is the entry.
    std::vector<HloComputation*> comps = module_->computations();
    module_->set_entry_computation(comps.back());
  }
  if (!module_->has_header()) module_->set_name(std::string(module_->entry_computation()->name()));
  // The rest of the text is read: dropped before the module is verified and
  // printed.
  if (done_before_ != nullptr) (*done_before_)(text_.size());
  module_->EndBulkLoad(std::move(names_));
  return std::move(module_);
}

bool Parser::ParseHeader() {
  LexIdent();  // HloModule
  absl::string_view name;
  bool percent;
  if (!LexName(&name, &percent, "a module name after 'HloModule'")) return false;
  module_->set_name(std::string(name));
  // Old dumps end the name with ':' (`HloModule m:`).
  if (Cur() == ':') {
    ++pos_;
    module_->mutable_text_info()->flags |= kTextHeaderColon;
  }
  return ParseCommaPrefixed([&] {
    if (!SkipSpace()) return false;
    size_t attr_pos = pos_;
    absl::string_view attr = LexIdent();
    if (attr.empty()) return Fail(attr_pos, "expected a header attribute name");
    if (!ExpectOr('=', "after header attribute '", attr, "'")) return false;
    if (module_->header_order().size() >= kMaxListedItems) {
      return Fail(attr_pos, absl::StrCat("more than ", kMaxListedItems, " header attributes"));
    }
    if (!SkipSpace()) return false;
    size_t value_pos = pos_;
    absl::string_view value;
    if (attr == "replica_count" || attr == "num_partitions") {
      int64_t n;
      if (!LexInt64(&n, absl::StrCat("for ", attr))) return false;
      if (n < 0) return Fail(value_pos, absl::StrCat(attr, " must not be negative"));
      if (attr == "replica_count") {
        module_->set_replica_count(n);
      } else {
        module_->set_num_partitions(n);
      }
    } else {
      if (!ScanValue(&value)) return false;
      if (module_->header_attribute(attr) != nullptr) {
        return Fail(attr_pos, absl::StrCat("duplicate header attribute '", attr, "'"));
      }
      module_->mutable_header_attributes()->push_back({std::string(attr), std::string(value)});
    }
    for (const std::string& seen : module_->header_order()) {
      if (seen == attr) return Fail(attr_pos, absl::StrCat("duplicate header attribute '", attr, "'"));
    }
    module_->mutable_header_order()->push_back(std::string(attr));
    return true;
  });
}

// XLA's stack-frame index (`FileNames`, `FunctionNames`, `FileLocations`,
// `StackFrames` sections of `N "string"` / `N {...}` lines), kept verbatim.
bool Parser::ParseStackFrames() {
  if (!SkipSpace()) return false;
  size_t start = pos_;
  size_t end = pos_;
  while (true) {
    if (!SkipSpace()) return false;
    size_t save = pos_;
    absl::string_view word = LexIdent();
    if (word != "FileNames" && word != "FunctionNames" && word != "FileLocations" &&
        word != "StackFrames") {
      pos_ = save;
      break;
    }
    end = pos_;
    while (true) {
      if (!SkipSpace()) return false;
      if (!IsDigit(Cur())) break;
      int64_t id;
      if (!LexInt64(&id, "in the stack-frame index")) return false;
      if (!SkipSpace()) return false;
      if (Cur() == '"' || Cur() == '{') {
        absl::string_view value;
        if (!ScanValue(&value)) return false;
      } else {
        return Fail(pos_, "expected a string or '{...}' entry in the stack-frame index");
      }
      end = pos_;
    }
  }
  if (end > start) module_->mutable_text_info()->stack_frames = std::string(text_.substr(start, end - start));
  pos_ = end;
  return true;
}

// ---------------------------------------------------------------------------
// Computations
// ---------------------------------------------------------------------------

bool Parser::ParseComputation() {
  size_t start = pos_;
  const bool is_entry = LexKeyword("ENTRY");
  if (is_entry) {
    if (seen_entry_) return Fail(start, "more than one ENTRY computation");
    seen_entry_ = true;
  }
  absl::string_view name;
  bool percent;
  if (!SkipSpace()) return false;
  size_t name_pos = pos_;
  if (!AtEnd() && !IsIdentChar(Cur()) && Cur() != '%') {
    return Fail(pos_, "expected a computation (a name, or 'ENTRY')");
  }
  if (!LexName(&name, &percent, "a computation name")) return false;
  if (module_->GetComputationWithName(name) != nullptr) {
    return Fail(name_pos, absl::StrCat("duplicate computation name '", name, "'"));
  }
  auto computation = HloComputation::CreateInArena(module_->instruction_arena(), name);
  HloComputation::TextInfo* info = computation->mutable_text_info();
  info->flags = kTextFlagsSet | (percent ? kTextPercentName : 0);
  if (!SkipSpace()) return false;
  size_t sig_result_pos = 0;
  Shape sig_result;
  absl::string_view written_signature;
  std::string kept_signature;  // its bytes, read after the body (done_before_)
  if (Cur() == '(') {
    size_t sig_start = pos_;
    size_t end;
    if (!ScanBalanced(&end)) return false;
    pos_ = end;
    if (!SkipSpace()) return false;
    if (text_.substr(pos_, 2) != "->") return Fail(pos_, "expected '->' in the computation signature");
    pos_ += 2;
    if (!SkipSpace()) return false;
    sig_result_pos = pos_;
    if (!ParseShape(&sig_result, 0, /*space_before_layout=*/false)) return false;
    info->has_signature = true;
    written_signature = text_.substr(sig_start, pos_ - sig_start);
    if (done_before_ != nullptr) {
      kept_signature.assign(written_signature.data(), written_signature.size());
      written_signature = kept_signature;
    }
  }
  if (!SkipSpace()) return false;
  size_t open_pos = pos_;
  if (!ExpectOr('{', "to open computation '", name, "'")) return false;
  HloComputation* comp = module_->AddComputation(std::move(computation), is_entry);
  if (comp->name() != name) {
    return Fail(name_pos, absl::StrCat("duplicate computation name '", name, "'"));
  }
  if (!ResolveComputation(comp, open_pos)) return false;
  if (info->has_signature && comp->root_instruction() != nullptr &&
      !sig_result.Compatible(comp->root_instruction()->shape())) {
    return Fail(sig_result_pos,
                absl::StrCat("the computation's declared result shape ", sig_result.ToString(),
                             " does not match its root's shape ",
                             comp->root_instruction()->shape().ToString()));
  }
  // A signature written as XLA prints it (the usual case) is not stored:
  // the printer derives it again. Only one written differently is kept,
  // with the canonical form it stands for (see TextInfo).
  if (info->has_signature && !ComputationSignatureIs(*comp, written_signature)) {
    comp->set_written_signature(written_signature, ComputationSignature(*comp));
  }
  {
    size_t look = pos_;
    while (look < text_.size() && text_[look] == ' ') ++look;
    if (text_.substr(look, 3) == "// " && text_.substr(look + 3, comp->name().size()) == comp->name()) {
      size_t after = look + 3 + comp->name().size();
      if (after >= text_.size() || text_[after] == '\n' || text_[after] == '\r') {
        info->flags |= kTextClosingNameComment;
      }
    }
  }
  // `}, execution_thread="..."`
  size_t save = pos_;
  if (!SkipSpace()) return false;
  if (Cur() == ',') {
    ++pos_;
    if (!SkipSpace()) return false;
    size_t attr_pos = pos_;
    absl::string_view attr = LexIdent();
    if (attr != "execution_thread") {
      return Fail(attr_pos, "expected 'execution_thread' after a computation's closing '}'");
    }
    if (!Expect('=', "after execution_thread")) return false;
    absl::string_view value;
    if (!ScanValue(&value)) return false;
    std::string thread;
    if (!ParseString(value, pos_ - value.size(), &thread)) return false;
    comp->set_execution_thread(std::move(thread));
  } else {
    pos_ = save;
  }
  return true;
}

// Parses the instructions of `comp` up to its closing '}', then resolves
// operand names and control predecessors.
HloInstruction* Parser::FindLocal(absl::string_view name, const HloComputation* comp) const {
  if (!cur_.renamed.empty()) {
    auto it = cur_.renamed.find(name);
    if (it != cur_.renamed.end()) return it->second;
  }
  HloInstruction* found = names_.Find(name);
  if (found == nullptr || found->parent() != comp ||
      (!cur_.generated.empty() && cur_.generated.contains(found))) {
    return nullptr;
  }
  return found;
}

void Parser::ReportProgress() {
  if (done_before_ != nullptr) (*done_before_)(pos_);
  InstructionArena& arena = module_->instruction_arena();
  const size_t used = arena.used_bytes();
  const double rest_text = static_cast<double>(text_.size() - pos_);
  // The rate so far, or the last step's if lower: a text whose last part
  // makes less per byte (100,000 small computations, then an entry of
  // 100,000 one-line calls) would otherwise be expected to need more than
  // it does, and its last huge block, resident whole, be mostly unused at
  // the parse's end, when the memory peaks (0.8 MB there; docs/
  // performance.md, "twenty-fifth session"). Lower is safe: the arena's
  // end is then in small pages sooner. HILO_ARENA_RECENT_RATE=0 uses the
  // rate so far alone.
  static const bool recent = !EnvSwitchIsZero("HILO_ARENA_RECENT_RATE");  // read once per process
  double rate = static_cast<double>(used) / static_cast<double>(pos_);
  if (recent && pos_ > reported_done_ && used >= reported_used_) {
    rate = std::min(rate, static_cast<double>(used - reported_used_) /
                              static_cast<double>(pos_ - reported_done_));
  }
  reported_done_ = pos_;
  reported_used_ = used;
  arena.ExpectBytes(static_cast<size_t>(std::min(rate * rest_text, 0x1p60)));  // a size_t, whatever the text
}

void Parser::RecordShapeText(const HloInstruction* inst, absl::string_view shape_text) {
  // Only once an operand's shape has been written in the module
  // (SkipDefinedOperand): a module that writes none (XLA's current style)
  // never reads the table, which took 8 bytes per instruction of the
  // computation being parsed (0.8 MB at the peak of 100,000 calls in one
  // entry; docs/performance.md, "twenty-fifth session"). The instructions
  // before the first written operand shape have no span: an operand naming
  // one is parsed. HILO_SHAPE_SPANS_LAZY=0 records from the first
  // instruction.
  static const bool lazy = !EnvSwitchIsZero("HILO_SHAPE_SPANS_LAZY");  // read once per process
  if (lazy && !operand_shape_seen_) return;
  const int64_t id = inst->unique_id();
  const uint64_t begin = reinterpret_cast<uintptr_t>(shape_text.data());
  if (id < 0 || shape_text.empty() || shape_text.size() > 0xffff || begin >= (uint64_t{1} << 47)) {
    return;
  }
  if (cur_.first_id < 0) cur_.first_id = id;
  if (id < cur_.first_id) return;  // not expected: then the shape is parsed
  const size_t at = static_cast<size_t>(id - cur_.first_id);
  std::vector<uint64_t>& spans = cur_.shape_spans;
  if (spans.size() <= at) {
    // The room doubles, but the zeros are written 4,096 entries at a time:
    // growing by one element per instruction went through vector's
    // fill-insert every time (2.5% of a parse), and filling a whole
    // doubling at once wrote up to half a vector no instruction used (the
    // entry computation of 100,000 calls: 250 KB at the parse's end).
    if (spans.capacity() <= at) spans.reserve(std::max<size_t>(at + 1, 2 * spans.capacity()));
    spans.resize(std::min(spans.capacity(), std::max<size_t>(at + 1, spans.size() + 4096)), 0);
  }
  spans[at] = (begin << 16) | shape_text.size();
}

size_t Parser::ArrayShapeTextEnd(size_t start) const {
  // An array shape has no space: it ends at the next one. Bounded, so that a
  // long line without spaces costs no more than parsing it.
  const size_t size = text_.size();
  const void* space = std::memchr(text_.data() + start, ' ', std::min<size_t>(size - start, 256));
  return space == nullptr ? size : static_cast<size_t>(static_cast<const char*>(space) - text_.data());
}

size_t Parser::ShapeTextEnd(size_t start) const {
  // An array's next space, a tuple's first space outside brackets. Anything
  // unusual in a tuple (a comment, a string, a line break) gives up; for an
  // array, callers check that the text up to the space is exactly a shape.
  const char* data = text_.data();
  const size_t size = text_.size();
  if (start < size && data[start] != '(') return ArrayShapeTextEnd(start);
  int depth = 0;
  size_t i = start;
  while (i < size) {
    if (depth > 0) {
      // Inside brackets only brackets and what gives up matter (spaces do
      // not): found sixteen bytes at a time.
      const size_t from = i;
      i = std::min(from + 16, size);
      for (unsigned mask = BracketMask(text_.substr(from), /*breaks_and_slashes=*/true);
           mask != 0; mask &= mask - 1) {
        const size_t j = from + static_cast<size_t>(__builtin_ctz(mask));
        const char c = data[j];
        if (c == '(' || c == '[' || c == '{') {
          ++depth;
        } else if (c == ')' || c == ']' || c == '}') {
          if (--depth == 0) {
            i = j + 1;
            break;
          }
        } else {
          return size;  // a line break, a string, a comment
        }
      }
      continue;
    }
    const char c = data[i];
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ' ') {
      return i;
    } else if (!IsIdentChar(c)) {  // an unmatched closer, '"', '/', a line break, ...
      return size;
    }
    ++i;
  }
  return size;
}

HloInstruction* Parser::SkipDefinedOperand(const HloComputation* comp, absl::string_view* name,
                                           size_t* name_pos) {
  operand_shape_seen_ = true;  // the spans are recorded from now on
  const char* data = text_.data();
  const size_t size = text_.size();
  const size_t start = pos_;
  // If the bytes up to the shape's end are not exactly the definition's
  // shape (a space before a layout, say), the comparison below fails and
  // the shape is parsed.
  size_t i = ShapeTextEnd(start);
  if (i == size || i == start) return nullptr;
  const size_t shape_end = i;
  while (i < size && data[i] == ' ') ++i;
  const size_t percent_pos = i;
  if (i < size && data[i] == '%') ++i;
  const size_t name_start = i;
  i += IdentifierLength(text_.substr(i));
  if (i == name_start || i == size || data[i] == '#' || data[i] == '(') return nullptr;
  const absl::string_view found(data + name_start, i - name_start);
  HloInstruction* defined = FindLocal(found, comp);
  if (defined == nullptr || NeedsShape(defined)) return nullptr;
  // `defined` is of the computation being resolved (FindLocal).
  const int64_t id = defined->unique_id();
  if (cur_.first_id < 0 || id < cur_.first_id) return nullptr;
  const size_t at = static_cast<size_t>(id - cur_.first_id);
  if (at >= cur_.shape_spans.size()) return nullptr;
  const uint64_t span = cur_.shape_spans[at];
  const size_t shape_size = span & 0xffff;
  if (shape_size == 0 || shape_size != shape_end - start ||
      std::memcmp(reinterpret_cast<const char*>(span >> 16), data + start, shape_size) != 0) {
    return nullptr;
  }
  *name = found;
  *name_pos = percent_pos;
  pos_ = i;
  return defined;
}

std::string Parser::UniqueName(absl::string_view hint) {
  if (!names_.contains(hint)) return std::string(hint);
  int64_t& next = next_suffix_[hint];
  while (true) {
    std::string candidate = absl::StrCat(hint, ".", ++next);
    if (!names_.contains(candidate)) return candidate;
  }
}

bool Parser::RegisterName(absl::string_view name, size_t name_hash, size_t name_pos,
                          HloInstruction* inst, const HloComputation* comp) {
  if (!name.empty()) {
    // The set finds an instruction by its name: it must be `name` now.
    if (inst->name() != name) inst->SetNameUnchecked(std::string(name));
    const HloInstruction* existing = names_.Insert(inst, name_hash);
    if (existing == nullptr) return true;
    // (The parent first: `generated` holds only this computation's.)
    if (cur_.renamed.contains(name) ||
        (existing->parent() == comp && !cur_.generated.contains(existing))) {
      return Fail(name_pos, absl::StrCat("duplicate instruction name '", name, "'"));
    }
    cur_.renamed.emplace(cur_.operand_text.Copy(name), inst);
  }
  inst->SetNameUnchecked(UniqueName(name.empty() ? HloOpcodeString(inst->opcode()) : name));
  names_.Insert(inst);
  cur_.generated.insert(inst);
  return true;
}

void Parser::ReportProgressIn(HloComputation* comp, size_t open_pos, size_t* next_list_check) {
  ReportProgress();
  static const bool reserve_lists = !EnvSwitchIsZero("HILO_PARSE_RESERVE_LIST");
  const size_t parsed = comp->instruction_slots().size();
  if (reserve_lists && parsed >= *next_list_check) {
    *next_list_check = ReserveInstructionList(comp, parsed, open_pos);
  }
}

size_t Parser::ReserveInstructionList(HloComputation* comp, size_t parsed, size_t open_pos) {
  // The computation's instructions so far took pos_ - open_pos bytes of
  // text: at that rate the rest of the input would hold `rest` more. The
  // rest may be other computations, so the list grows to at most 8 times
  // its size at once (no instruction's memory is touched for it: only the
  // list's slots as they are filled).
  const size_t bytes = std::max<size_t>(pos_ - open_pos, 1);
  const size_t rest = static_cast<size_t>(
      static_cast<double>(text_.size() - pos_) * static_cast<double>(parsed) / static_cast<double>(bytes));
  const size_t estimate = parsed + rest;
  const size_t target = std::min(estimate + estimate / 16 + 16, parsed * 8);
  if (target <= parsed * 2) return parsed * 2;  // doubling gets there as soon
  comp->ReserveInstructions(static_cast<int64_t>(target));
  // Asked again before the list is full: the asking is every kDoneStep
  // bytes, not every instruction.
  return target - target / 8;
}

bool Parser::ResolveComputation(HloComputation* comp, size_t open_pos) {
  const size_t calls_begin = pending_calls_.size();
  cur_.Clear();
  HloInstruction* root = nullptr;
  HloInstruction* last = nullptr;
  size_t next_list_check = kFirstListCheck;
  while (true) {
    if (!SkipSpace()) return false;
    if (AtEnd()) {
      return Fail(open_pos, absl::StrCat("unexpected end of input: computation '", comp->name(),
                                         "' is never closed with '}'"));
    }
    if (Cur() == '}') {
      ++pos_;
      break;
    }
    size_t inst_pos = pos_;
    bool is_root = false;
    HloInstruction* inst = nullptr;
    if (!ParseInstruction(comp, &is_root, &inst)) return false;
    if (pos_ - reported_done_ >= kDoneStep) ReportProgressIn(comp, open_pos, &next_list_check);
    if (is_root) {
      if (root != nullptr) return Fail(inst_pos, "a computation can have only one ROOT");
      root = inst;
    }
    last = inst;
  }
  if (last == nullptr) {
    return Fail(open_pos, absl::StrCat("computation '", comp->name(), "' has no instructions"));
  }
  comp->set_root_instruction(root != nullptr ? root : last);
  for (const PendingOperand& p : cur_.pending_operands) {
    HloInstruction* operand = p.direct;
    if (operand == nullptr) {
      operand = FindLocal(p.name, comp);
      if (operand == nullptr) {
        return Fail(p.pos, absl::StrCat("undefined operand '", p.name, "' (no instruction of ",
                                        "computation '", comp->name(), "' has that name)"));
      }
      if (operand == p.user) {
        return Fail(p.pos, absl::StrCat("instruction '", p.name, "' uses itself as an operand"));
      }
    }
    // Compact get-tuple-element `%t#1#0`: explicit get-tuple-element
    // instructions, one per index.
    absl::string_view rest = p.gte_indices;
    while (!rest.empty()) {
      rest.remove_prefix(1);  // '#'
      size_t n = 0;
      while (n < rest.size() && IsDigit(rest[n])) ++n;
      int64_t index = -1;
      std::from_chars(rest.data(), rest.data() + n, index);
      rest.remove_prefix(n);
      // NeedsShape first: scanning cur_.needs_shape for every compact operand
      // would be quadratic (100,000 of each took 3.5 s, 200,000 12.7 s).
      if (NeedsShape(operand)) {
        for (const auto& [pending, pos] : cur_.needs_shape) {
          if (pending == operand) {
            return Fail(p.pos, "a compact get-tuple-element needs its operand's shape written");
          }
        }
      }
      if (!operand->shape().IsTuple()) {
        return Fail(p.pos, absl::StrCat("compact get-tuple-element on '", operand->name(),
                                        "', which is not a tuple"));
      }
      if (index < 0 || index >= operand->shape().tuple_shapes_size()) {
        return Fail(p.pos, absl::StrCat("compact get-tuple-element index ", index,
                                        " is out of range for ", operand->shape().ToString()));
      }
      auto gte = HloInstruction::CreateGetTupleElement(operand->shape().tuple_shapes(index),
                                                       operand, index);
      gte->AppendAttributeName("index");  // as it prints
      HloInstruction* made = gte.get();
      if (!RegisterName("", 0, p.pos, made, comp)) return false;
      operand = comp->AddInstruction(std::move(gte));
    }
    p.user->AppendOperand(operand);
  }
  if (!cur_.needs_shape.empty()) {
    absl::flat_hash_map<const HloInstruction*, size_t> pending;
    for (const auto& [inst, pos] : cur_.needs_shape) pending[inst] = pos;
    PendingCallIndex calls;
    for (size_t i = calls_begin; i < pending_calls_.size(); ++i) {
      if (pending.contains(pending_calls_[i].inst)) calls[pending_calls_[i].inst].push_back(i);
    }
    for (HloInstruction* inst : comp->MakeInstructionPostOrder()) {
      auto it = pending.find(inst);
      if (it == pending.end()) continue;
      for (const HloInstruction* operand : inst->operands()) {
        if (pending.contains(operand)) {
          return Fail(it->second, "the shapes of these instructions depend on each other in a cycle");
        }
      }
      if (!InferShape(inst, it->second, calls)) return false;
      pending.erase(it);
    }
    cur_.needs_shape.clear();
  }
  for (const PendingOperand& p : cur_.pending_operands) {
    if (p.declared_shape_index < 0 || !p.gte_indices.empty()) continue;
    const HloInstruction* operand = p.direct;
    if (operand == nullptr) operand = FindLocal(p.name, comp);
    const Shape& declared = cur_.declared_shapes[p.declared_shape_index];
    if (!declared.Compatible(operand->shape())) {
      return Fail(p.pos, absl::StrCat("the declared operand shape ", declared.ToString(),
                                      " does not match the shape of operand '", operand->name(),
                                      "': ", operand->shape().ToString()));
    }
  }
  for (const PendingControl& p : cur_.pending_control) {
    HloInstruction* predecessor = FindLocal(p.name, comp);
    if (predecessor == nullptr) {
      return Fail(p.pos, absl::StrCat("undefined control predecessor '", p.name, "'"));
    }
    predecessor->AddControlDependencyTo(p.successor);
  }
  return true;
}

// XLA's window attribute (`{size=3x3 stride=2x2 pad=1_1x0_0 lhs_dilate=1x1
// rhs_dilate=1x1}`), as far as shape inference needs it.
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t base_dilation = 1;
  int64_t window_dilation = 1;
};

// Parses `text` into one entry per dimension; false if it is not a window
// this inference understands (then the shape must be written).
bool ParseWindowForInference(absl::string_view text, std::vector<WindowDimension>* window) {
  window->clear();
  if (!absl::ConsumePrefix(&text, "{") || !absl::ConsumeSuffix(&text, "}")) return false;
  for (absl::string_view field : absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits('=', 1));
    std::vector<absl::string_view> items = absl::StrSplit(kv.second, 'x');
    if (window->empty()) window->resize(items.size());
    if (items.size() != window->size()) return false;
    for (size_t d = 0; d < items.size(); ++d) {
      WindowDimension& w = (*window)[d];
      if (kv.first == "pad") {
        std::pair<absl::string_view, absl::string_view> lh = absl::StrSplit(items[d], '_');
        if (!absl::SimpleAtoi(lh.first, &w.pad_low) || !absl::SimpleAtoi(lh.second, &w.pad_high)) {
          return false;
        }
        continue;
      }
      int64_t* target = kv.first == "size"         ? &w.size
                        : kv.first == "stride"     ? &w.stride
                        : kv.first == "lhs_dilate" ? &w.base_dilation
                        : kv.first == "rhs_dilate" ? &w.window_dilation
                                                   : nullptr;
      if (target == nullptr) {
        if (kv.first == "rhs_reversal") continue;  // no effect on the shape
        return false;
      }
      if (!absl::SimpleAtoi(items[d], target) || *target < 1) return false;
    }
  }
  return true;
}

// The extent of a windowed dimension of size `n` (XLA's InferWindowOutputShape);
// nullopt if it is negative or overflows.
std::optional<int64_t> WindowedExtent(int64_t n, const WindowDimension& w) {
  const __int128 padded = static_cast<__int128>(n > 0 ? n - 1 : 0) * w.base_dilation +
                          (n > 0 ? 1 : 0) + w.pad_low + w.pad_high;
  const __int128 window = static_cast<__int128>(w.size - 1) * w.window_dilation + 1;
  if (padded < 0) return std::nullopt;
  const __int128 out = padded < window ? 0 : (padded - window) / w.stride + 1;
  if (out > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(out);
}

// XLA's primitive_util::HigherPrecisionType, the element type ShapeInference
// gives a dot, ragged or not, of two types: complex before real, then the
// floating-point type with more range, then more precision, then the wider
// type, then signed before unsigned.
PrimitiveType HigherPrecisionType(PrimitiveType a, PrimitiveType b) {
  auto properties = [](PrimitiveType t) {
    const PrimitiveType c = t == PrimitiveType::C64    ? PrimitiveType::F32
                            : t == PrimitiveType::C128 ? PrimitiveType::F64
                                                       : t;
    // numeric_limits' max_exponent and digits of the floating-point types.
    int exponent = -1, significand = -1;
    switch (c) {
      case PrimitiveType::F16: exponent = 16, significand = 11; break;
      case PrimitiveType::BF16: exponent = 128, significand = 8; break;
      case PrimitiveType::F32: exponent = 128, significand = 24; break;
      case PrimitiveType::F64: exponent = 1024, significand = 53; break;
      case PrimitiveType::F8E5M2: exponent = 16, significand = 3; break;
      case PrimitiveType::F8E4M3FN: exponent = 9, significand = 4; break;
      case PrimitiveType::F8E4M3B11FNUZ: exponent = 5, significand = 4; break;
      case PrimitiveType::F8E5M2FNUZ: exponent = 16, significand = 3; break;
      case PrimitiveType::F8E4M3FNUZ: exponent = 8, significand = 4; break;
      case PrimitiveType::F8E4M3: exponent = 8, significand = 4; break;
      case PrimitiveType::F8E3M4: exponent = 4, significand = 5; break;
      case PrimitiveType::F4E2M1FN: exponent = 3, significand = 2; break;
      case PrimitiveType::F8E8M0FNU: exponent = 128, significand = 1; break;
      default: break;
    }
    return std::make_tuple(IsComplexType(t), exponent, significand, BitWidth(c),
                           IsSignedIntegralType(c));
  };
  return properties(b) > properties(a) ? b : a;
}

// An integer list attribute `{a,b,...}` (absent: empty); false if malformed.
bool IntListAttribute(const HloInstruction& inst, absl::string_view name, std::vector<int64_t>* out) {
  out->clear();
  const std::string* value = inst.raw_attribute(name);
  if (value == nullptr) return true;
  absl::string_view list = *value;
  if (!absl::ConsumePrefix(&list, "{") || !absl::ConsumeSuffix(&list, "}")) return false;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(item, &n)) return false;
    out->push_back(n);
  }
  return true;
}

const Shape* Parser::CalledRootShape(const HloInstruction* inst, absl::string_view attribute,
                                     size_t index, const PendingCallIndex& calls,
                                     std::string* why) {
  const HloComputation* called = CalledComputation(inst, attribute, index, calls, why);
  return called == nullptr ? nullptr : &called->root_instruction()->shape();
}

const HloComputation* Parser::CalledComputation(const HloInstruction* inst,
                                                absl::string_view attribute, size_t index,
                                                const PendingCallIndex& calls, std::string* why) {
  // An inline computation (`to_apply={...}`) is attached as it is parsed;
  // a named one waits in pending_calls_ until the module is read.
  const HloComputation* called = nullptr;
  absl::Span<HloComputation* const> attached = inst->called_computations(attribute);
  if (index < attached.size()) {
    called = attached[index];
  } else if (auto it = calls.find(inst); it != calls.end()) {
    for (size_t i : it->second) {
      const PendingCall& call = pending_calls_[i];
      if (call.attribute != attribute) continue;
      if (index >= call.names.size()) break;
      called = module_->GetComputationWithName(call.names[index].name);
      if (called == nullptr) {
        *why = absl::StrCat("computation '", call.names[index].name,
                            "' is not defined before this instruction, so its result shape is "
                            "not known yet");
        return nullptr;
      }
      break;
    }
  }
  if (called == nullptr) {
    *why = absl::StrCat("it has no ", attribute, " computation");
    return nullptr;
  }
  if (called == inst->parent() || called->root_instruction() == nullptr) {
    *why = absl::StrCat("it calls computation '", called->name(),
                        "', whose result shape is not known yet (it is still being read)");
    return nullptr;
  }
  return called;
}

// XLA lets a test omit the shape of the instructions whose shape its parser
// infers (hlo_parser.cc, CanInferShape); the same opcodes are inferred
// here, and any other is an error asking for the shape.
// Inferred array shapes get the default layout when the shape they are
// derived from has a layout, and none otherwise, so a module written with
// layouts prints with layouts.
bool Parser::InferShape(HloInstruction* inst, size_t pos, const PendingCallIndex& calls) {
  auto operand_shape = [&](int64_t i) -> const Shape* {
    return i < inst->operand_count() ? &inst->operand(i)->shape() : nullptr;
  };
  auto fail = [&](absl::string_view why) {
    return Fail(pos, absl::StrCat("the shape of this ", HloOpcodeString(inst->opcode()),
                                  " is omitted and can not be inferred: ", why));
  };
  // Operand i, which must be an array.
  auto array_operand = [&](int64_t i) -> const Shape* {
    const Shape* s = operand_shape(i);
    return s != nullptr && s->IsArray() ? s : nullptr;
  };
  // An array of `type` and `dims`, laid out by default when `like` has a layout.
  auto make_array = [](PrimitiveType type, absl::Span<const int64_t> dims, const Shape& like) {
    Shape shape = Shape::MakeArray(type, dims);
    if (like.has_layout()) {
      Layout layout;
      for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
        layout.minor_to_major.push_back(d);
      }
      shape.set_layout(std::move(layout));
    }
    return shape;
  };
  auto int_attribute = [&](absl::string_view name, int64_t* out) {
    const std::string* value = inst->raw_attribute(name);
    return value != nullptr && absl::SimpleAtoi(*value, out);
  };
  auto complex_of = [](PrimitiveType t) {
    return t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64;
  };
  auto real_of = [](PrimitiveType t) {
    if (t == PrimitiveType::C64) return PrimitiveType::F32;
    if (t == PrimitiveType::C128) return PrimitiveType::F64;
    return t;
  };
  std::string why;
  Shape result;
  switch (inst->opcode()) {
    case HloOpcode::kTuple: {
      // Inferred tuples copy their operands' shapes; a chain of them could
      // grow exponentially, so the size is capped.
      int64_t nodes = 0;
      for (const HloInstruction* operand : inst->operands()) {
        nodes += ShapeNodes(operand->shape(), int64_t{1} << 20);
        if (nodes > (int64_t{1} << 20)) return fail("the tuple shape would be too large");
      }
      std::vector<Shape> elements;
      for (const HloInstruction* operand : inst->operands()) elements.push_back(operand->shape());
      result = Shape::MakeTuple(std::move(elements));
      if (ShapeDepth(result) > kMaxNestingDepth) {
        return fail(absl::StrCat("the tuple would nest more than ", kMaxNestingDepth, " deep"));
      }
      break;
    }
    case HloOpcode::kGetTupleElement: {
      const Shape* t = operand_shape(0);
      if (t == nullptr || !t->IsTuple()) return fail("its operand is not a tuple");
      if (inst->tuple_index() < 0 || inst->tuple_index() >= t->tuple_shapes_size()) {
        return fail("index out of range");
      }
      result = t->tuple_shapes(inst->tuple_index());
      break;
    }
    case HloOpcode::kAfterAll:
      result = Shape::MakeToken();
      break;
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId:
      result = Shape::MakeScalar(PrimitiveType::U32);
      break;
    case HloOpcode::kGetDimensionSize:
      result = Shape::MakeScalar(PrimitiveType::S32);
      break;
    case HloOpcode::kCompare:
    case HloOpcode::kIsFinite: {
      const Shape* a = array_operand(0);
      if (a == nullptr) return fail("it needs an array operand");
      result = *a;
      result.set_element_type(PrimitiveType::PRED);
      break;
    }
    case HloOpcode::kSelect:
    case HloOpcode::kClamp: {
      const Shape* a = operand_shape(1);
      if (a == nullptr) return fail("it needs three operands");
      result = *a;
      break;
    }
    case HloOpcode::kTriangularSolve: {  // the shape of b
      const Shape* b = operand_shape(1);
      if (b == nullptr) return fail("it needs two operands");
      result = *b;
      break;
    }
    case HloOpcode::kComplex:
    case HloOpcode::kReal:
    case HloOpcode::kImag: {
      const Shape* a = array_operand(0);
      if (a == nullptr) return fail("it needs an array operand");
      result = *a;
      result.set_element_type(inst->opcode() == HloOpcode::kComplex ? complex_of(a->element_type())
                                                                     : real_of(a->element_type()));
      break;
    }
    case HloOpcode::kDot:
    case HloOpcode::kScaledDot:
    case HloOpcode::kRaggedDot: {
      // XLA's InferDotOpShape / InferRaggedDotOpShape: the lhs batch
      // dimensions, the other lhs dimensions that are not contracted, then
      // the rhs dimensions that are neither batch, contracting nor a ragged
      // dot's group dimension; of the higher-precision element type.
      // scaled-dot(lhs, lhs_scale, rhs, rhs_scale): XLA's parser infers the
      // dot of operands 0 and 2. ragged-dot(lhs, rhs, group_sizes): see below.
      const bool ragged = inst->opcode() == HloOpcode::kRaggedDot;
      const Shape* lhs = array_operand(0);
      const Shape* rhs = array_operand(inst->opcode() == HloOpcode::kScaledDot ? 2 : 1);
      if (lhs == nullptr || rhs == nullptr) return fail("it needs two array operands");
      const DotDimensionNumbers& dn = inst->dot_dimension_numbers();
      // Which lists name each dimension (marks, not searches: linear
      // whatever the lists hold); false if a dimension is out of range.
      enum : uint8_t { kFree = 0, kBatch = 1, kContracting = 2, kGroup = 4 };
      auto mark = [](const Shape& shape, const std::vector<int64_t>& list, uint8_t kind,
                     std::vector<uint8_t>* marks) {
        marks->resize(shape.rank(), kFree);
        for (int64_t d : list) {
          if (d < 0 || d >= shape.rank() || (*marks)[d] != kFree) return false;
          (*marks)[d] = kind;
        }
        return true;
      };
      std::vector<uint8_t> lhs_marks, rhs_marks;
      if (!mark(*lhs, dn.lhs_batch_dimensions, kBatch, &lhs_marks) ||
          !mark(*lhs, dn.lhs_contracting_dimensions, kContracting, &lhs_marks) ||
          !mark(*rhs, dn.rhs_batch_dimensions, kBatch, &rhs_marks) ||
          !mark(*rhs, dn.rhs_contracting_dimensions, kContracting, &rhs_marks)) {
        return fail("a batch or contracting dimension is out of range or named twice");
      }
      if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size() ||
          dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size()) {
        return fail("lhs and rhs name different numbers of batch or contracting dimensions");
      }
      for (const auto& [l, r] : {std::pair(&dn.lhs_batch_dimensions, &dn.rhs_batch_dimensions),
                                 std::pair(&dn.lhs_contracting_dimensions, &dn.rhs_contracting_dimensions)}) {
        for (size_t i = 0; i < l->size(); ++i) {
          if (lhs->dimensions((*l)[i]) != rhs->dimensions((*r)[i])) {
            return fail("a batch or contracting dimension has different sizes in lhs and rhs");
          }
        }
      }
      std::vector<int64_t> dims;
      if (ragged) {
        // Three modes, by what the one lhs ragged dimension is:
        //   non-contracting (m): [b,m,k], [g,b,k,n], [b,g] -> [b,m,n]
        //   contracting (k):     [b,m,k], [b,k,n],   [b,g] -> [g,b,m,n]
        //   batch (b):           [b,m,k], [b,k,n],   [g]   -> [b,m,n]
        // group_sizes is [g], or [b...,x...,g] where b... are the lhs batch
        // dimensions and x... the lhs dimensions of the ragged one's kind
        // that come before it.
        const Shape* group_sizes = array_operand(2);
        std::vector<int64_t> ragged_dims, group_dims;
        if (inst->operand_count() != 3 || group_sizes == nullptr) {
          return fail("it needs three array operands (lhs, rhs, group_sizes)");
        }
        if (!IntListAttribute(*inst, "lhs_ragged_dims", &ragged_dims) || ragged_dims.size() != 1) {
          return fail("it needs lhs_ragged_dims={d}: exactly one ragged dimension in the lhs");
        }
        const int64_t r = ragged_dims[0];
        if (r < 0 || r >= lhs->rank()) {
          return fail(absl::StrCat("lhs ragged dimension ", r, " is out of range [0, ", lhs->rank(), ")"));
        }
        const uint8_t mode = lhs_marks[r] & kBatch ? kBatch : lhs_marks[r] & kContracting ? kContracting : kFree;
        std::vector<int64_t> prefix;  // the sizes group_sizes must start with
        for (int64_t d : dn.lhs_batch_dimensions) {
          if (mode == kBatch && d == r) break;
          prefix.push_back(lhs->dimensions(d));
        }
        if (mode == kContracting) {
          for (int64_t d : dn.lhs_contracting_dimensions) {
            if (d == r) break;
            prefix.push_back(lhs->dimensions(d));
          }
        } else if (mode == kFree) {
          for (int64_t d = 0; d < r; ++d) {
            if (lhs_marks[d] == kFree) prefix.push_back(lhs->dimensions(d));
          }
        }
        const int64_t rank = group_sizes->rank();
        if (rank == 0 || (rank != 1 && (rank != static_cast<int64_t>(prefix.size()) + 1 ||
                                        !absl::c_equal(prefix, group_sizes->dimensions().first(rank - 1))))) {
          return fail(absl::StrCat("group_sizes is expected to have shape [",
                                   absl::StrJoin(prefix, ","), prefix.empty() ? "" : ",",
                                   "g] or [g], got ", group_sizes->ToString()));
        }
        const int64_t groups = group_sizes->dimensions(rank - 1);
        if (!IntListAttribute(*inst, "rhs_group_dims", &group_dims) ||
            !mark(*rhs, group_dims, kGroup, &rhs_marks)) {
          return fail("rhs_group_dims names a dimension out of range, twice, or that is batch or contracting");
        }
        if (mode != kFree && !group_dims.empty()) {
          return fail("there must be no rhs_group_dims when the lhs ragged dimension is batch or contracting");
        }
        if (mode == kFree && group_dims.size() != 1) {
          return fail("it needs rhs_group_dims={d}: exactly one rhs group dimension when the lhs "
                      "ragged dimension is non-contracting");
        }
        if (mode == kFree && rhs->dimensions(group_dims[0]) != groups) {
          return fail(absl::StrCat("the rhs group dimension has size ", rhs->dimensions(group_dims[0]),
                                   ", but group_sizes gives ", groups, " groups"));
        }
        if (mode == kContracting) dims.push_back(groups);
      }
      for (int64_t d : dn.lhs_batch_dimensions) dims.push_back(lhs->dimensions(d));
      for (int64_t d = 0; d < lhs->rank(); ++d) {
        if (lhs_marks[d] == kFree) dims.push_back(lhs->dimensions(d));
      }
      for (int64_t d = 0; d < rhs->rank(); ++d) {
        if (rhs_marks[d] == kFree) dims.push_back(rhs->dimensions(d));
      }
      result = make_array(HigherPrecisionType(lhs->element_type(), rhs->element_type()), dims, *lhs);
      break;
    }
    // --- Shapes from called computations --------------------------------------
    case HloOpcode::kCall: {  // to_apply's result
      const Shape* root = CalledRootShape(inst, "to_apply", 0, calls, &why);
      if (root == nullptr) return fail(why);
      result = *root;
      break;
    }
    case HloOpcode::kConditional: {  // the first branch's result
      bool by_bool = !inst->called_computations("true_computation").empty();
      if (auto it = calls.find(inst); it != calls.end()) {
        by_bool |= absl::c_any_of(it->second, [&](size_t i) {
          return pending_calls_[i].attribute == "true_computation";
        });
      }
      const Shape* root = CalledRootShape(
          inst, by_bool ? "true_computation" : "branch_computations", 0, calls, &why);
      if (root == nullptr) return fail(why);
      result = *root;
      break;
    }
    case HloOpcode::kWhile: {  // the loop state: the init operand's shape
      const Shape* init = operand_shape(0);
      if (init == nullptr) return fail("it has no operand");
      result = *init;
      break;
    }
    case HloOpcode::kMap: {  // operand 0's dimensions, to_apply's element type
      const Shape* a = array_operand(0);
      if (a == nullptr) return fail("it needs an array operand");
      const Shape* root = CalledRootShape(inst, "to_apply", 0, calls, &why);
      if (root == nullptr) return fail(why);
      if (!root->IsArray()) return fail("its to_apply computation does not return an array");
      result = make_array(root->element_type(), a->dimensions(), *a);
      break;
    }
    case HloOpcode::kReduce: {
      // Operand dimensions without the reduced ones; the element types of
      // to_apply's result (one array, or a tuple of them for a variadic reduce).
      const int64_t n = inst->operand_count() / 2;
      if (n == 0 || inst->operand_count() % 2 != 0) {
        return fail("it needs an even, non-zero number of operands (inputs, then init values)");
      }
      const Shape* root = CalledRootShape(inst, "to_apply", 0, calls, &why);
      if (root == nullptr) return fail(why);
      if (n == 1 ? !root->IsArray() : !root->IsTuple() || root->tuple_shapes_size() != n) {
        return fail(absl::StrCat("its to_apply computation does not return ",
                                 n == 1 ? "an array" : absl::StrCat("a tuple of ", n)));
      }
      const std::vector<int64_t> reduced = inst->dimensions().value_or(std::vector<int64_t>{});
      std::vector<Shape> outputs;
      for (int64_t i = 0; i < n; ++i) {
        const Shape* a = array_operand(i);
        if (a == nullptr) return fail(absl::StrCat("operand ", i, " is not an array"));
        std::vector<bool> drop(a->rank(), false);
        for (int64_t d : reduced) {
          if (d < 0 || d >= a->rank() || drop[d]) {
            return fail(absl::StrCat("reduced dimension ", d, " is out of range or repeated"));
          }
          drop[d] = true;
        }
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < a->rank(); ++d) {
          if (!drop[d]) dims.push_back(a->dimensions(d));
        }
        const Shape& accumulator = n == 1 ? *root : root->tuple_shapes(i);
        if (!accumulator.IsArray()) return fail("its to_apply computation does not return arrays");
        outputs.push_back(make_array(accumulator.element_type(), dims, *a));
      }
      result = n == 1 ? std::move(outputs[0]) : Shape::MakeTuple(std::move(outputs));
      break;
    }
    case HloOpcode::kSort: {  // the operands' shapes (a tuple of them when several)
      if (inst->operand_count() == 0) return fail("it has no operand");
      if (inst->operand_count() == 1) {
        result = *operand_shape(0);
        break;
      }
      std::vector<Shape> elements;
      for (const HloInstruction* operand : inst->operands()) elements.push_back(operand->shape());
      result = Shape::MakeTuple(std::move(elements));
      break;
    }
    case HloOpcode::kScatter: {  // the scattered-into operands' shapes
      const int64_t n = (inst->operand_count() - 1) / 2;
      if (n < 1 || inst->operand_count() % 2 != 1) {
        return fail("it needs operands, scatter indices and as many updates as operands");
      }
      if (n == 1) {
        result = *operand_shape(0);
        break;
      }
      std::vector<Shape> elements;
      for (int64_t i = 0; i < n; ++i) elements.push_back(*operand_shape(i));
      result = Shape::MakeTuple(std::move(elements));
      break;
    }
    // --- Shapes from attributes ------------------------------------------------
    case HloOpcode::kBroadcast: {
      // As XLA's parser (ShapeInference::InferBroadcastShape(operand,
      // dimensions)): the `dimensions` are taken as sizes *prepended* to the
      // operand's dimensions, so only `broadcast(scalar)` with no or empty
      // dimensions comes out as one would expect.
      const Shape* a = array_operand(0);
      if (a == nullptr) return fail("it needs an array operand");
      if (!inst->dimensions().has_value() && a->rank() != 0) {
        return fail("it needs dimensions={...} (only a scalar's broadcast may omit them)");
      }
      std::vector<int64_t> dims = inst->dimensions().value_or(std::vector<int64_t>{});
      for (int64_t d : dims) {
        if (d < 0) return fail(absl::StrCat("dimension size ", d, " is negative"));
      }
      dims.insert(dims.end(), a->dimensions().begin(), a->dimensions().end());
      result = make_array(a->element_type(), dims, *a);
      break;
    }
    case HloOpcode::kConcatenate: {
      const Shape* a = array_operand(0);
      if (a == nullptr) return fail("it needs array operands");
      if (!inst->dimensions().has_value() || inst->dimensions()->size() != 1) {
        return fail("it needs dimensions={d}");
      }
      const int64_t d = (*inst->dimensions())[0];
      if (d < 0 || d >= a->rank()) return fail(absl::StrCat("dimension ", d, " is out of range"));
      std::vector<int64_t> dims(a->dimensions().begin(), a->dimensions().end());
      for (int64_t i = 1; i < inst->operand_count(); ++i) {
        const Shape* b = array_operand(i);
        if (b == nullptr || b->rank() != a->rank()) {
          return fail(absl::StrCat("operand ", i, " is not an array of rank ", a->rank()));
        }
        if (__builtin_add_overflow(dims[d], b->dimensions(d), &dims[d])) {
          return fail("the concatenated dimension overflows");
        }
      }
      result = make_array(a->element_type(), dims, *a);
      break;
    }
    case HloOpcode::kTranspose: {
      const Shape* a = array_operand(0);
      if (a == nullptr) return fail("it needs an array operand");
      const std::vector<int64_t> perm = inst->dimensions().value_or(std::vector<int64_t>{});
      std::vector<bool> seen(a->rank(), false);
      if (static_cast<int64_t>(perm.size()) != a->rank()) {
        return fail("dimensions={...} is not a permutation of the operand's dimensions");
      }
      std::vector<int64_t> dims;
      for (int64_t d : perm) {
        if (d < 0 || d >= a->rank() || seen[d]) {
          return fail("dimensions={...} is not a permutation of the operand's dimensions");
        }
        seen[d] = true;
        dims.push_back(a->dimensions(d));
      }
      result = make_array(a->element_type(), dims, *a);
      break;
    }
    case HloOpcode::kPad: {
      // padding=lo_hi[_interior]x...: lo + hi + d + (d - 1) * interior.
      const Shape* a = array_operand(0);
      const std::string* padding = inst->raw_attribute("padding");
      if (a == nullptr || padding == nullptr) return fail("it needs an array operand and padding=");
      std::vector<absl::string_view> per_dim = absl::StrSplit(*padding, 'x');
      if (static_cast<int64_t>(per_dim.size()) != a->rank() && !(a->rank() == 0 && padding->empty())) {
        return fail(absl::StrCat("padding=", *padding, " does not give one entry per dimension"));
      }
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < a->rank(); ++d) {
        std::vector<absl::string_view> parts = absl::StrSplit(per_dim[d], '_');
        int64_t v[3] = {0, 0, 0};
        bool ok = parts.size() == 2 || parts.size() == 3;
        for (size_t i = 0; ok && i < parts.size(); ++i) ok = absl::SimpleAtoi(parts[i], &v[i]);
        const int64_t n = a->dimensions(d);
        __int128 size = static_cast<__int128>(v[0]) + v[1] + n +
                        static_cast<__int128>(n > 0 ? n - 1 : 0) * v[2];
        if (!ok || v[2] < 0 || size < 0 || size > INT64_MAX) {
          return fail(absl::StrCat("padding '", per_dim[d], "' of dimension ", d,
                                   " is not lo_hi[_interior] giving a valid size"));
        }
        dims.push_back(static_cast<int64_t>(size));
      }
      result = make_array(a->element_type(), dims, *a);
      break;
    }
    case HloOpcode::kSetDimensionSize: {  // the operand, that dimension dynamic
      const Shape* a = array_operand(0);
      if (a == nullptr || !inst->dimensions().has_value() || inst->dimensions()->size() != 1) {
        return fail("it needs an array operand and dimensions={d}");
      }
      const int64_t d = (*inst->dimensions())[0];
      if (d < 0 || d >= a->rank()) return fail(absl::StrCat("dimension ", d, " is out of range"));
      result = *a;
      result.set_dynamic_dimension(d, true);
      break;
    }
    case HloOpcode::kTopK: {  // (values, s32 indices), the last dimension k
      const Shape* a = array_operand(0);
      int64_t k = 0;
      if (a == nullptr || a->rank() == 0 || !int_attribute("k", &k) || k < 0) {
        return fail("it needs an operand of rank >= 1 and k=N");
      }
      std::vector<int64_t> dims(a->dimensions().begin(), a->dimensions().end());
      dims.back() = k;
      result = Shape::MakeTuple({make_array(a->element_type(), dims, *a),
                                 make_array(PrimitiveType::S32, dims, *a)});
      break;
    }
    case HloOpcode::kBatchNormTraining:
    case HloOpcode::kBatchNormGrad: {
      // (operand, [feature], [feature]).
      const Shape* a = array_operand(0);
      int64_t feature = 0;
      if (a == nullptr || !int_attribute("feature_index", &feature) || feature < 0 ||
          feature >= a->rank()) {
        return fail("it needs an array operand and a feature_index= in range");
      }
      const int64_t n = a->dimensions(feature);
      result = Shape::MakeTuple({*a, make_array(a->element_type(), {n}, *a),
                                 make_array(a->element_type(), {n}, *a)});
      break;
    }
    case HloOpcode::kFft: {
      const Shape* a = array_operand(0);
      const std::string* type = inst->raw_attribute("fft_type");
      std::vector<int64_t> lengths;
      if (!IntListAttribute(*inst, "fft_length", &lengths) ||
          absl::c_any_of(lengths, [](int64_t n) { return n < 0; })) {
        lengths.clear();
      }
      if (a == nullptr || type == nullptr || lengths.empty() ||
          static_cast<int64_t>(lengths.size()) > a->rank()) {
        return fail("it needs an array operand, fft_type= and fft_length={...}");
      }
      result = *a;
      if (*type == "RFFT") {
        result.set_element_type(complex_of(a->element_type()));
        result.set_dimensions(a->rank() - 1, lengths.back() / 2 + 1);
      } else if (*type == "IRFFT") {
        result.set_element_type(real_of(a->element_type()));
        result.set_dimensions(a->rank() - 1, lengths.back());
      } else if (*type != "FFT" && *type != "IFFT") {
        return fail(absl::StrCat("unknown fft_type ", *type));
      }
      break;
    }
    case HloOpcode::kReduceWindow: {
      // Each input windowed (XLA's InferReduceWindowShape), with the element
      // types of to_apply's result; a tuple for a variadic reduce-window.
      const int64_t n = inst->operand_count() / 2;
      if (n == 0 || inst->operand_count() % 2 != 0) {
        return fail("it needs an even, non-zero number of operands (inputs, then init values)");
      }
      std::vector<WindowDimension> window;
      const std::string* window_text = inst->raw_attribute("window");
      if (window_text != nullptr && !ParseWindowForInference(*window_text, &window)) {
        return fail(absl::StrCat("window=", *window_text, " is not a window this parser reads"));
      }
      const Shape* root = CalledRootShape(inst, "to_apply", 0, calls, &why);
      if (root == nullptr) return fail(why);
      if (n == 1 ? !root->IsArray() : !root->IsTuple() || root->tuple_shapes_size() != n) {
        return fail(absl::StrCat("its to_apply computation does not return ",
                                 n == 1 ? "an array" : absl::StrCat("a tuple of ", n)));
      }
      std::vector<Shape> outputs;
      for (int64_t i = 0; i < n; ++i) {
        const Shape* a = array_operand(i);
        if (a == nullptr || static_cast<int64_t>(window.size()) != a->rank()) {
          return fail(absl::StrCat("operand ", i, " is not an array with one window dimension per dimension"));
        }
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < a->rank(); ++d) {
          std::optional<int64_t> extent = WindowedExtent(a->dimensions(d), window[d]);
          if (!extent.has_value()) return fail(absl::StrCat("dimension ", d, " has no valid windowed size"));
          dims.push_back(*extent);
        }
        const Shape& accumulator = n == 1 ? *root : root->tuple_shapes(i);
        if (!accumulator.IsArray()) return fail("its to_apply computation does not return arrays");
        outputs.push_back(make_array(accumulator.element_type(), dims, *a));
      }
      result = n == 1 ? std::move(outputs[0]) : Shape::MakeTuple(std::move(outputs));
      break;
    }
    case HloOpcode::kGather: {
      // XLA's InferGatherShape: the batch dimensions of the indices (all but
      // index_vector_dim) fill the output dimensions that are not offset_dims;
      // offset_dims get the slice sizes of the operand dimensions that are not
      // collapsed or batching, in order.
      const Shape* operand = array_operand(0);
      const Shape* indices = array_operand(1);
      std::vector<int64_t> offset_dims, collapsed, operand_batching, slice_sizes;
      int64_t index_vector_dim = 0;
      if (operand == nullptr || indices == nullptr ||
          !IntListAttribute(*inst, "offset_dims", &offset_dims) ||
          !IntListAttribute(*inst, "collapsed_slice_dims", &collapsed) ||
          !IntListAttribute(*inst, "operand_batching_dims", &operand_batching) ||
          !IntListAttribute(*inst, "slice_sizes", &slice_sizes) ||
          !int_attribute("index_vector_dim", &index_vector_dim) ||
          static_cast<int64_t>(slice_sizes.size()) != operand->rank() || index_vector_dim < 0 ||
          index_vector_dim > indices->rank()) {
        return fail("it needs array operands and offset_dims, collapsed_slice_dims, "
                    "index_vector_dim and slice_sizes matching the operand");
      }
      // Marks instead of searches: linear in the ranks whatever the lists say.
      std::vector<bool> sliced_away(operand->rank(), false);
      for (const std::vector<int64_t>* list : {&collapsed, &operand_batching}) {
        for (int64_t d : *list) {
          if (d < 0 || d >= operand->rank()) return fail("a collapsed or batching dimension is out of range");
          sliced_away[d] = true;
        }
      }
      std::vector<int64_t> offsets;
      for (int64_t d = 0; d < operand->rank(); ++d) {
        if (!sliced_away[d]) offsets.push_back(slice_sizes[d]);
      }
      std::vector<int64_t> batch;
      for (int64_t d = 0; d < indices->rank(); ++d) {
        if (d != index_vector_dim) batch.push_back(indices->dimensions(d));
      }
      if (offsets.size() != offset_dims.size()) {
        return fail("offset_dims does not name one output dimension per uncollapsed slice dimension");
      }
      const int64_t rank = static_cast<int64_t>(batch.size() + offsets.size());
      std::vector<bool> is_offset(rank, false);
      for (int64_t d : offset_dims) {
        if (d < 0 || d >= rank || is_offset[d]) return fail("offset_dims names a dimension out of range or twice");
        is_offset[d] = true;
      }
      std::vector<int64_t> dims;
      size_t next_offset = 0, next_batch = 0;
      for (int64_t d = 0; d < rank; ++d) {
        if (is_offset[d]) {
          dims.push_back(offsets[next_offset++]);
        } else if (next_batch < batch.size()) {
          dims.push_back(batch[next_batch++]);
        } else {
          return fail("offset_dims names a dimension out of range");
        }
      }
      if (next_offset != offsets.size()) return fail("offset_dims names a dimension out of range");
      result = make_array(operand->element_type(), dims, *operand);
      break;
    }
    case HloOpcode::kConvolution: {
      // XLA's InferConvolveShape without a preferred element type: the lhs
      // type; batch = lhs batch / batch_group_count, feature = the kernel's
      // output feature, each spatial dimension windowed; placed as
      // dim_labels' output part (`b01f_01io->b01f`) says.
      const Shape* lhs = array_operand(0);
      const Shape* rhs = array_operand(1);
      const std::string* labels = inst->raw_attribute("dim_labels");
      if (lhs == nullptr || rhs == nullptr || labels == nullptr) {
        return fail("it needs two array operands and dim_labels=");
      }
      std::pair<absl::string_view, absl::string_view> io = absl::StrSplit(*labels, "->");
      std::pair<absl::string_view, absl::string_view> lr = absl::StrSplit(io.first, '_');
      const absl::string_view in = lr.first, kernel = lr.second, out = io.second;
      std::vector<WindowDimension> window;
      const std::string* window_text = inst->raw_attribute("window");
      int64_t groups = 1;
      if (inst->raw_attribute("batch_group_count") != nullptr &&
          !int_attribute("batch_group_count", &groups)) {
        groups = 0;
      }
      const int64_t rank = lhs->rank();
      if (static_cast<int64_t>(in.size()) != rank || static_cast<int64_t>(kernel.size()) != rank ||
          static_cast<int64_t>(out.size()) != rank || rhs->rank() != rank || groups < 1 ||
          (window_text != nullptr && !ParseWindowForInference(*window_text, &window)) ||
          static_cast<int64_t>(window.size()) != rank - 2) {
        return fail("dim_labels, window and batch_group_count do not describe this convolution");
      }
      std::vector<int64_t> dims;
      for (char c : out) {
        size_t at = absl::string_view::npos;
        int64_t size = -1;
        if (c == 'b' && (at = in.find('b')) != absl::string_view::npos) {
          size = lhs->dimensions(at) / groups;
        } else if (c == 'f' && (at = kernel.find('o')) != absl::string_view::npos) {
          size = rhs->dimensions(at);
        } else if (c >= '0' && c - '0' < rank - 2 && (at = in.find(c)) != absl::string_view::npos) {
          size = WindowedExtent(lhs->dimensions(at), window[c - '0']).value_or(-1);
        }
        if (size < 0) return fail(absl::StrCat("dim_labels=", *labels, " can not be read"));
        dims.push_back(size);
      }
      result = make_array(lhs->element_type(), dims, *lhs);
      break;
    }
    case HloOpcode::kScan: {
      // XLA's parser (no ShapeInference function): scan(inputs..., carries...)
      // with to_apply, dimensions={d}, num_carries=N. to_apply's result, each
      // output (a root tuple's elements but the last N) with the scanned
      // dimension d, of operand 0's size, inserted; the carries as they are.
      // A non-tuple root is the carry when N > 0, else the one output.
      int64_t carries = 0;
      if (!int_attribute("num_carries", &carries) || carries < 0) return fail("it needs num_carries=N");
      if (!inst->dimensions().has_value() || inst->dimensions()->size() != 1) {
        return fail("it needs dimensions={d}: exactly one scan dimension");
      }
      const int64_t d = (*inst->dimensions())[0];
      if (inst->operand_count() <= carries) {
        return fail(absl::StrCat("it has ", inst->operand_count(), " operands and num_carries=", carries,
                                 ", so no input to scan"));
      }
      const Shape* first = array_operand(0);
      if (first == nullptr || d < 0 || d >= first->rank()) {
        return fail(absl::StrCat("scan dimension ", d, " is not a dimension of array operand 0"));
      }
      const HloComputation* body = CalledComputation(inst, "to_apply", 0, calls, &why);
      if (body == nullptr) return fail(why);
      if (body->num_parameters() != inst->operand_count()) {
        return fail(absl::StrCat("it has ", inst->operand_count(), " operands, but to_apply has ",
                                 body->num_parameters(), " parameters"));
      }
      const Shape& root = body->root_instruction()->shape();
      auto scanned = [&](const Shape& s, Shape* out) {
        if (!s.IsArray() || d > s.rank()) return false;
        std::vector<int64_t> dims(s.dimensions().begin(), s.dimensions().end());
        dims.insert(dims.begin() + d, first->dimensions(d));
        *out = make_array(s.element_type(), dims, s);
        return true;
      };
      const char* not_scannable = "to_apply returns an output that is not an array of rank >= the scan dimension";
      if (!root.IsTuple()) {
        if (carries > 0) {
          result = root;
        } else if (!scanned(root, &result)) {
          return fail(not_scannable);
        }
        break;
      }
      const int64_t n = root.tuple_shapes_size();
      std::vector<Shape> elements(n);
      for (int64_t i = 0; i < n; ++i) {
        if (i + carries >= n) {
          elements[i] = root.tuple_shapes(i);
        } else if (!scanned(root.tuple_shapes(i), &elements[i])) {
          return fail(not_scannable);
        }
      }
      result = Shape::MakeTuple(std::move(elements));
      break;
    }
    default: {
      // Elementwise and layout-preserving ops: the shape of operand 0.
      switch (inst->opcode()) {
#define HILO_ELEMENTWISE(op) case HloOpcode::op:
        HILO_ELEMENTWISE(kAbs) HILO_ELEMENTWISE(kAdd) HILO_ELEMENTWISE(kAnd)
        HILO_ELEMENTWISE(kAtan2) HILO_ELEMENTWISE(kCbrt) HILO_ELEMENTWISE(kCeil)
        HILO_ELEMENTWISE(kClz) HILO_ELEMENTWISE(kCopy) HILO_ELEMENTWISE(kCos)
        HILO_ELEMENTWISE(kDivide) HILO_ELEMENTWISE(kErf) HILO_ELEMENTWISE(kExp)
        HILO_ELEMENTWISE(kExpm1) HILO_ELEMENTWISE(kFloor) HILO_ELEMENTWISE(kLog)
        HILO_ELEMENTWISE(kLog1p) HILO_ELEMENTWISE(kLogistic) HILO_ELEMENTWISE(kMaximum)
        HILO_ELEMENTWISE(kMinimum) HILO_ELEMENTWISE(kMultiply) HILO_ELEMENTWISE(kNegate)
        HILO_ELEMENTWISE(kNot) HILO_ELEMENTWISE(kOr) HILO_ELEMENTWISE(kPopulationCount)
        HILO_ELEMENTWISE(kPower) HILO_ELEMENTWISE(kRemainder) HILO_ELEMENTWISE(kRoundNearestAfz)
        HILO_ELEMENTWISE(kRoundNearestEven) HILO_ELEMENTWISE(kRsqrt) HILO_ELEMENTWISE(kShiftLeft)
        HILO_ELEMENTWISE(kShiftRightArithmetic) HILO_ELEMENTWISE(kShiftRightLogical)
        HILO_ELEMENTWISE(kSign) HILO_ELEMENTWISE(kSin) HILO_ELEMENTWISE(kSqrt)
        HILO_ELEMENTWISE(kSubtract) HILO_ELEMENTWISE(kTan) HILO_ELEMENTWISE(kTanh)
        HILO_ELEMENTWISE(kXor) HILO_ELEMENTWISE(kOptimizationBarrier)
        HILO_ELEMENTWISE(kAcos) HILO_ELEMENTWISE(kAcosh) HILO_ELEMENTWISE(kAsin)
        HILO_ELEMENTWISE(kAsinh) HILO_ELEMENTWISE(kAtanh) HILO_ELEMENTWISE(kCosh)
        HILO_ELEMENTWISE(kSinh) HILO_ELEMENTWISE(kReverse) HILO_ELEMENTWISE(kCholesky)
        HILO_ELEMENTWISE(kAddDependency) HILO_ELEMENTWISE(kDomain)
        HILO_ELEMENTWISE(kBatchNormInference) HILO_ELEMENTWISE(kSelectAndScatter)
#undef HILO_ELEMENTWISE
        {
          const Shape* a = operand_shape(0);
          if (a == nullptr) return fail("it has no operand");
          result = *a;
          break;
        }
        default:
          // XLA's parser: "cannot infer shape for opcode" (collectives,
          // reshape, convert, custom-call, fusion, ... must be written).
          return Fail(pos, absl::StrCat("cannot infer shape for opcode: ",
                                        HloOpcodeString(inst->opcode()),
                                        " (XLA's parser infers no shape for it: write the shape)"));
      }
    }
  }
  inst->set_shape(SharedShape(std::move(result)));
  return true;
}

// Recursive over tuple nesting, which is bounded by kMaxNestingDepth.
bool Parser::ParseShape(Shape* shape, int depth, bool space_before_layout) {
  if (!SkipSpace()) return false;
  if (depth > kMaxNestingDepth) {
    return Fail(pos_, absl::StrCat("shape nested more than ", kMaxNestingDepth, " deep"));
  }
  if (Cur() == '(') {
    ++pos_;
    std::vector<Shape> elements;
    if (!ParseCommaSeparated(')', "to close a tuple shape", [&] {
          elements.emplace_back();
          return ParseShape(&elements.back(), depth + 1);
        })) {
      return false;
    }
    *shape = Shape::MakeTuple(std::move(elements));
    return true;
  }
  size_t type_pos = pos_;
  absl::string_view type_name = LexIdent();
  if (type_name == "b" && Cur() == '(') {  // XLA's buffer type `b(f32[4])`
    ++pos_;
    Shape contents;
    if (!ParseShape(&contents, depth + 1)) return false;
    if (!SkipSpace()) return false;
    if (!Expect(')', "to close a buffer shape")) return false;
    if (!contents.IsArray()) return Fail(type_pos, "a buffer shape must hold an array shape");
    *shape = Shape::MakeBuffer(std::move(contents));
    return true;
  }
  if (type_name.empty()) {
    if (AtEnd()) return Fail(pos_, "unexpected end of input: expected a shape");
    return Fail(pos_, "expected a shape");
  }
  std::optional<PrimitiveType> type = StringToPrimitiveType(type_name);
  if (!type.has_value()) {
    return Fail(type_pos, absl::StrCat("unknown element type '", type_name, "'"));
  }
  if (*type == PrimitiveType::TOKEN) {
    *shape = Shape::MakeToken();
  } else if (*type == PrimitiveType::OPAQUE_TYPE) {
    *shape = Shape::MakeOpaque();
  } else {
    *shape = Shape::MakeArray(*type, {});
  }
  if (Cur() != '[') return Fail(pos_, absl::StrCat("expected '[' after element type '", type_name, "'"));
  ++pos_;
  if (!ParseCommaSeparated(']', "to close the dimensions", [&] {
        if (Cur() == '?') {
          ++pos_;
          shape->add_dimension(kUnboundedSize, true);
          return true;
        }
        bool dynamic = false;
        if (Cur() == '<' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '=') {
          dynamic = true;
          pos_ += 2;
        }
        size_t dim_pos = pos_;
        int64_t d;
        if (!LexInt64(&d, "as a dimension size")) return false;
        if (d < 0) return Fail(dim_pos, "a dimension size must not be negative");
        shape->add_dimension(d, dynamic);
        return true;
      })) {
    return false;
  }
  if (!shape->IsArray() && shape->rank() != 0) {
    return Fail(type_pos, absl::StrCat("a ", type_name, " shape has no dimensions"));
  }
  // Layout: `{1,0}` or `{1,0:T(8,128)}`, normally right after the `]`; a
  // space before it is accepted except where a '{' opens a body (the
  // result shape of a computation signature).
  if (space_before_layout && Cur() == ' ') {
    size_t look = pos_;
    while (look < text_.size() && text_[look] == ' ') ++look;
    if (look < text_.size() && text_[look] == '{') pos_ = look;
  }
  // Where a '{' may open a body, it is a layout only if a layout starts
  // inside it (`-> f32[2]{0} {` vs `-> f32[2]{`).
  bool is_layout = Cur() == '{';
  if (is_layout && !space_before_layout) {
    char next = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    is_layout = IsDigit(next) || next == ':';
  }
  if (is_layout) {
    size_t open = pos_;
    ++pos_;
    Layout layout;
    if (!SkipSpace()) return false;
    while (Cur() != '}' && Cur() != ':') {
      int64_t d;
      if (!LexInt64(&d, "in the layout")) return false;
      layout.minor_to_major.push_back(d);
      if (!SkipSpace()) return false;
      if (Cur() == ',') {
        ++pos_;
        if (!SkipSpace()) return false;
      } else if (Cur() != '}' && Cur() != ':') {
        if (AtEnd()) return Fail(open, "unexpected end of input in a layout");
        return Fail(pos_, "expected ',', ':' or '}' in the layout");
      }
    }
    if (Cur() == ':') {
      ++pos_;
      size_t tail_start = pos_;
      // The tail may hold shapes with layouts of their own (`P((s32[10]{0:T(100)}))`).
      int parens = 0;
      int braces = 0;
      while (pos_ < text_.size() && !(text_[pos_] == '}' && parens == 0 && braces == 0)) {
        char c = text_[pos_];
        if (c == '(') ++parens;
        if (c == ')' && --parens < 0) return Fail(pos_, "unbalanced ')' in a layout");
        if (c == '{') ++braces;
        if (c == '}') --braces;
        if (c == '\n' || parens > kMaxNestingDepth || braces > kMaxNestingDepth) {
          return Fail(pos_, "unterminated layout");
        }
        ++pos_;
      }
      if (AtEnd()) return Fail(open, "unexpected end of input in a layout");
      layout.tail.set(std::string(text_.substr(tail_start, pos_ - tail_start)));
    }
    ++pos_;  // '}'
    shape->set_layout(std::move(layout));
  }
  return true;
}

bool Parser::TakeCachedShape(SharedShape* shared, absl::string_view* kept_text, size_t* end) {
  const char* data = text_.data();
  const size_t size = text_.size();
  // The candidate text: the shape up to the next space (outside brackets).
  *end = ShapeTextEnd(pos_);
  if (*end == size) return false;
  // ParseShape reads one thing past the shape: a '{' after spaces is its
  // layout. Then the shape is not the text before the space.
  size_t look = *end;
  while (look < size && data[look] == ' ') ++look;
  if (look < size && data[look] == '{') {
    *end = size;
    return false;
  }
  auto it = shape_cache_.find(absl::string_view(data + pos_, *end - pos_));
  if (it == shape_cache_.end()) return false;
  *shared = it->second;  // the same shape, shared
  *kept_text = it->first;
  pos_ = *end;
  return true;
}

bool Parser::ParseDefinitionShape(SharedShape* shared, absl::string_view* kept_text) {
  *kept_text = {};
  size_t end;
  if (TakeCachedShape(shared, kept_text, &end)) return true;
  const size_t start = pos_;
  Shape shape;
  if (!ParseShape(&shape, 0)) return false;
  *shared = SharedShape(std::move(shape));
  // Kept only if the parse took exactly that text (not, say, a shape
  // followed by a comment).
  if (end != text_.size() && pos_ == end && shape_cache_.size() < kShapeCacheLimit) {
    *kept_text = cache_keys_.Copy(text_.substr(start, end - start));
    shape_cache_.emplace(*kept_text, *shared);
  }
  return true;
}

// ---------------------------------------------------------------------------
// Instructions
// ---------------------------------------------------------------------------

bool Parser::ParseInstruction(HloComputation* comp, bool* is_root, HloInstruction** out) {
  if (!SkipSpace()) return false;
  if (Cur() == 'R' && LexKeyword("ROOT")) *is_root = true;  // most lines start with a name
  absl::string_view name;
  bool percent;
  if (!SkipSpace()) return false;
  size_t name_pos = pos_;
  if (!LexName(&name, &percent, "an instruction name")) return false;
  if (!ExpectOr('=', "after instruction name '", name, "'")) return false;
  // The name's slot in the index is fetched into the cache now and used
  // once the body is parsed (RegisterName), which hides the miss: a large
  // module's index is far larger than the cache (HILO_PARSE_NAME_PREFETCH=0
  // turns the fetch off; its gain is in docs/performance.md).
  static const bool prefetch_name = !EnvSwitchIsZero("HILO_PARSE_NAME_PREFETCH");
  const size_t name_hash = HashName(name);
  if (prefetch_name) names_.Prefetch(name_hash);
  uint32_t flags = kTextFlagsSet | (percent ? kTextPercentName : 0);
  HloInstruction* inst = nullptr;
  last_operand_count_ = 0;
  const size_t calls_begin = pending_calls_.size();
  if (!ParseInstructionBody(comp, name, name_hash, name_pos, flags, nullptr, 0, &inst)) {
    return false;
  }
  flags = inst->text_flags();
  // Attributes.
  uint32_t written_kinds = 0;
  if (!ParseCommaPrefixed([&] { return ParseAttribute(inst, &flags, &written_kinds); })) {
    return false;
  }
  inst->set_text_flags(flags);
  // The module's style (used for instructions a pass adds) is that of the
  // first instruction, the first with operands, and the first with more than
  // five operands, each for the bits it shows.
  uint32_t& style = module_->mutable_text_info()->flags;
  if (!style_set_) {
    style_set_ = true;
    style |= kTextFlagsSet | (flags & kTextPercentName);
  }
  if (!operand_style_set_ && last_operand_count_ > 0) {
    operand_style_set_ = true;
    style |= flags & (kTextOperandShapes | kTextPercentOperands);
    if (flags & kTextOperandShapes) style |= kTextOperandIndexComments;
  }
  if (!index_style_set_ && last_operand_count_ > 5) {
    index_style_set_ = true;
    style = (style & ~kTextOperandIndexComments) | (flags & kTextOperandIndexComments);
  }
  if (!calls_style_set_ && !inst->called_computation_attributes().empty()) {
    calls_style_set_ = true;
    style |= flags & kTextPercentCalls;
  }
  // After the style: it is taken from the first instruction with an inline
  // computation, as before named ones were attached this early.
  AttachKnownCalls(inst, calls_begin);
  *out = inst;
  return true;
}

bool Parser::ParseInstructionBody(HloComputation* comp, absl::string_view name, size_t name_hash,
                                  size_t name_pos, uint32_t flags, Shape* preparsed_shape, int depth,
                                  HloInstruction** out) {
  if (depth > kMaxNestingDepth) {
    return Fail(name_pos, absl::StrCat("instructions nested more than ", kMaxNestingDepth, " deep"));
  }
  if (!SkipSpace()) return false;
  SharedShape shape;
  bool shape_omitted = false;
  size_t shape_pos = pos_;
  absl::string_view shape_text;  // as written, when parsed here
  if (preparsed_shape != nullptr) {
    shape = SharedShape(std::move(*preparsed_shape));
  } else {
    // The shape may be omitted (`t = tuple(a, b)`): an identifier directly
    // followed by '(' is the opcode. A shape seen before is told first (no
    // opcode is written like a shape).
    // `b(` opens XLA's buffer shape, not an opcode.
    absl::string_view kept_text;
    size_t cached_end;
    if (!TakeCachedShape(&shape, &kept_text, &cached_end)) {
      size_t s = pos_;
      absl::string_view ident = LexIdent();
      shape_omitted = Cur() == '(' && pos_ > s && ident != "b";
      pos_ = s;
      if (!shape_omitted && !ParseDefinitionShape(&shape, &kept_text)) return false;
    }
    // The input's text only while it stays in memory (done_before_ unset).
    if (!kept_text.empty()) {
      shape_text = kept_text;
    } else if (!shape_omitted && done_before_ == nullptr) {
      shape_text = text_.substr(shape_pos, pos_ - shape_pos);
    }
  }
  if (!SkipSpace()) return false;
  size_t opcode_pos = pos_;
  absl::string_view opcode_name = LexIdent();
  if (opcode_name.empty()) {
    if (AtEnd()) return Fail(pos_, "unexpected end of input: expected an opcode");
    return Fail(pos_, "expected an opcode");
  }
  std::optional<HloOpcode> opcode = StringToHloOpcode(opcode_name);
  absl::string_view legacy_direction;
  if (!opcode.has_value()) {
    // XLA's async syntax sugar: `custom-call-start` = async-start wrapping a custom-call.
    for (auto [suffix, async_op] : {std::pair{absl::string_view("-start"), HloOpcode::kAsyncStart},
                                    std::pair{absl::string_view("-update"), HloOpcode::kAsyncUpdate},
                                    std::pair{absl::string_view("-done"), HloOpcode::kAsyncDone}}) {
      if (opcode_name.size() > suffix.size() &&
          opcode_name.substr(opcode_name.size() - suffix.size()) == suffix) {
        std::optional<HloOpcode> wrapped =
            StringToHloOpcode(opcode_name.substr(0, opcode_name.size() - suffix.size()));
        if (wrapped.has_value()) {
          opcode = async_op;
          flags |= kTextAsyncSugar |
                   (static_cast<uint32_t>(HloOpcodeByte(*wrapped)) << kTextSugarOpcodeShift);
        }
        break;
      }
    }
    if (!opcode.has_value()) {
      legacy_direction = LegacyCompareDirection(opcode_name);
      if (!legacy_direction.empty()) opcode = HloOpcode::kCompare;
    }
    if (!opcode.has_value() && opcode_name == "sparse" && Cur() == '{') {
      return Fail(opcode_pos, "the 2018 sparse layout syntax `f32[...]sparse{N}` is no longer "
                              "part of HLO");
    }
    if (!opcode.has_value()) {
      return Fail(opcode_pos, absl::StrCat("unknown opcode '", opcode_name, "'"));
    }
  }
  if (shape_omitted && (*opcode == HloOpcode::kParameter || *opcode == HloOpcode::kConstant)) {
    return Fail(shape_pos, absl::StrCat("expected a shape before '", opcode_name, "'"));
  }
  if (!ExpectOr('(', "after opcode '", opcode_name, "'")) return false;

  auto inst_owner = HloInstruction::CreateInArena(module_->instruction_arena(), *opcode,
                                                  std::move(shape), name);
  HloInstruction* inst = inst_owner.get();
  if (*opcode == HloOpcode::kParameter) {
    int64_t n;
    size_t n_pos = pos_;
    if (!LexInt64(&n, "as the parameter number")) return false;
    if (n < 0) return Fail(n_pos, "a parameter number must not be negative");
    if (!HloInstruction::IndexFits(n)) {
      return Fail(n_pos, absl::StrCat("parameter number ", n, " is too large (at most 2147483647)"));
    }
    inst->set_parameter_number(n);
    if (comp->parameter_instruction(n) != nullptr) {
      return Fail(n_pos, absl::StrCat("duplicate parameter number ", n));
    }
    if (!Expect(')', "after the parameter number")) return false;
  } else if (*opcode == HloOpcode::kConstant) {
    // The literal is kept verbatim; it runs to the ')' matching `constant(`.
    size_t lit_start = pos_;
    pos_ = lit_start - 1;
    size_t end;
    if (!ScanBalanced(&end)) return false;
    absl::string_view literal = text_.substr(lit_start, end - 1 - lit_start);
    auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (!literal.empty() && is_space(literal.front())) literal.remove_prefix(1);
    while (!literal.empty() && is_space(literal.back())) literal.remove_suffix(1);
    pos_ = end;
    if (literal.find("...") == absl::string_view::npos) {
      absl::Status valid = ValidateLiteralText(inst->shape(), literal);
      if (!valid.ok()) {
        return Fail(lit_start, absl::StrCat("bad literal for shape ", inst->shape().ToString(),
                                            ": ", valid.message()));
      }
    }
    inst->set_literal_text(std::string(literal));
  } else {
    const size_t list_start = pos_;
    int64_t operand_count = 0;
    // Operands are queued for the end of the computation as they are read
    // (nested instructions queue theirs in between, and that order names
    // compact get-tuple-elements). `defined_operands[i]` is operand i when it
    // is already known (the usual case: XLA writes definitions before uses);
    // then the queue entries are taken back and the instruction takes its
    // operands at once.
    const size_t first_pending = cur_.pending_operands.size();
    absl::InlinedVector<HloInstruction*, 4> defined_operands;
    bool first = true;
    if (!ParseCommaSeparated(')', "to close the operand list", [&] {
      int64_t declared = -1;
      size_t operand_pos = pos_;
      bool has_shape = false;
      HloInstruction* defined = nullptr;  // looked up while checking a declared shape
      // The operand's name when SkipDefinedOperand read it.
      absl::string_view known_name;
      size_t known_pos = 0;
      if (Cur() == '(') {
        has_shape = true;
        defined = SkipDefinedOperand(comp, &known_name, &known_pos);
      } else {
        size_t s = pos_;
        absl::string_view word = LexIdent();
        const bool bracket = Cur() == '[';
        pos_ = s;
        // A shape written exactly as its operand's definition's had its type
        // read there: only another needs it looked up.
        if (bracket) defined = SkipDefinedOperand(comp, &known_name, &known_pos);
        has_shape = defined != nullptr || (bracket && StringToPrimitiveType(word).has_value());
      }
      HloInstruction* nested = nullptr;
      // A nested instruction instead of an operand name, if one starts here
      // (into `nested`); false on an error.
      auto parse_nested = [&](Shape* preparsed_shape) {
        size_t s = pos_;
        LexIdent();
        bool is_nested = Cur() == '(' && pos_ > s;
        pos_ = s;
        if (!is_nested) return true;
        uint32_t nested_flags = kTextFlagsSet | (flags & (kTextPercentName | kTextOperandShapes |
                                                          kTextPercentOperands));
        return ParseInstructionBody(comp, "", 0, operand_pos, nested_flags, preparsed_shape,
                                    depth + 1, &nested);
      };
      // `add(x, multiply(y, z))`: a nested instruction whose shape is inferred.
      if (!has_shape && Cur() != '%' && !parse_nested(nullptr)) return false;
      if (!known_name.empty()) {  // its shape and name read already
        if (first) flags |= kTextOperandShapes;
      } else if (has_shape) {
        Shape operand_shape;
        if (!ParseShape(&operand_shape, 0)) return false;
        if (first) flags |= kTextOperandShapes;
        // `s32[] constant(0)`: a nested instruction instead of a name.
        if (!SkipSpace() || !parse_nested(&operand_shape)) return false;
        if (nested == nullptr) {
          // Usually the operand is already defined: check its shape now
          // instead of keeping the declared one for the end of the computation.
          if (!SkipSpace()) return false;
          size_t s2 = pos_;
          absl::string_view ref;
          bool ref_percent;
          if (!LexName(&ref, &ref_percent, "an operand name")) return false;
          const bool compact_gte = Cur() == '#';
          pos_ = s2;
          defined = compact_gte ? nullptr : FindLocal(ref, comp);
          if (defined != nullptr && !NeedsShape(defined)) {
            if (!operand_shape.Compatible(defined->shape())) {
              return Fail(s2, absl::StrCat("the declared operand shape ", operand_shape.ToString(),
                                           " does not match the shape of operand '", ref, "': ",
                                           defined->shape().ToString()));
            }
          } else {
            defined = nullptr;
            cur_.declared_shapes.push_back(std::move(operand_shape));
            declared = static_cast<int64_t>(cur_.declared_shapes.size()) - 1;
          }
        }
      }
      if (nested != nullptr) {
        cur_.pending_operands.push_back({inst, "", operand_pos, -1, nested, ""});
        defined_operands.push_back(nested);
      } else {
        absl::string_view operand = known_name;
        bool operand_percent;
        if (!known_name.empty()) {
          operand_pos = known_pos;
          operand_percent = text_[known_pos] == '%';
        } else {
          if (!SkipSpace()) return false;
          operand_pos = pos_;
          if (!LexName(&operand, &operand_percent, "an operand name")) return false;
        }
        if (first && operand_percent) flags |= kTextPercentOperands;
        // Compact get-tuple-element: `%t#0`, `%t#1#0`.
        size_t gte_start = pos_;
        while (Cur() == '#') {
          ++pos_;
          size_t digits = pos_;
          while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
          if (pos_ == digits || pos_ - digits > 9) {
            return Fail(digits, "expected a tuple index after '#'");
          }
        }
        const bool compact_gte = pos_ != gte_start;
        cur_.pending_operands.push_back({inst, operand, operand_pos, declared, nullptr,
                                     text_.substr(gte_start, pos_ - gte_start)});
        if (!has_shape && !compact_gte) defined = FindLocal(operand, comp);
        defined_operands.push_back(declared < 0 && !compact_gte ? defined : nullptr);
      }
      first = false;
      ++operand_count;
      return true;
    })) {
      return false;
    }
    // Operands are taken at once only while every instruction so far in the
    // computation could take them at once; after the first forward
    // reference all wait for the end of the computation, so every value's
    // users stay in the order the text uses it.
    // (A nested instruction that queued its operands cleared cur_.resolve_now,
    // so here the queue holds exactly this instruction's entries.)
    if (cur_.resolve_now &&
        std::find(defined_operands.begin(), defined_operands.end(), nullptr) ==
            defined_operands.end()) {
      cur_.pending_operands.resize(first_pending);
      inst->ReserveOperands(defined_operands.size());
      for (HloInstruction* operand : defined_operands) inst->AppendOperand(operand);
    } else {
      cur_.resolve_now = false;
      // These wait for the end of the computation: read them from copies.
      if (done_before_ != nullptr) {
        for (size_t i = cur_.copied_operands; i < cur_.pending_operands.size(); ++i) {
          PendingOperand& p = cur_.pending_operands[i];
          p.name = cur_.operand_text.Copy(p.name);
          p.gte_indices = cur_.operand_text.Copy(p.gte_indices);
        }
        cur_.copied_operands = cur_.pending_operands.size();
      }
    }
    last_operand_count_ = operand_count;
    if (operand_count > 5 &&
        text_.substr(list_start, pos_ - list_start).find("/*index=5*/") != absl::string_view::npos) {
      flags |= kTextOperandIndexComments;
    }
  }
  if (!RegisterName(name, name_hash, name_pos, inst, comp)) return false;
  if (!legacy_direction.empty()) {
    inst->mutable_raw_attributes()->push_back({"direction", std::string(legacy_direction)});
    inst->AppendAttributeName("direction");
  }
  inst->set_text_flags(flags);
  comp->AddInstruction(std::move(inst_owner));
  if (!shape_text.empty()) RecordShapeText(inst, shape_text);
  if (shape_omitted) cur_.needs_shape.emplace_back(inst, shape_pos);
  *out = inst;
  return true;
}

bool Parser::ParseAttribute(HloInstruction* inst, uint32_t* flags, uint32_t* written_kinds) {
  if (!SkipSpace()) return false;
  size_t attr_pos = pos_;
  absl::string_view attr = LexIdent();
  if (attr.empty()) {
    if (AtEnd()) return Fail(pos_, "unexpected end of input: expected an attribute name");
    return Fail(pos_, "expected an attribute name");
  }
  if (!ExpectOr('=', "after attribute '", attr, "'")) return false;
  if (inst->attribute_order().size() >= kMaxListedItems) {
    return Fail(attr_pos, absl::StrCat("more than ", kMaxListedItems,
                                       " attributes on one instruction"));
  }
  // A typed attribute written before is known by its kind's bit, any other
  // by its name.
  const Attr kind = Classify(attr);
  if (kind != kNotCanonical ? (*written_kinds & (1u << kind)) != 0
                            : absl::c_linear_search(inst->attribute_order(), attr)) {
    return Fail(attr_pos, absl::StrCat("duplicate attribute '", attr, "'"));
  }
  if (kind != kNotCanonical) *written_kinds |= 1u << kind;
  if (!SkipSpace()) return false;
  size_t value_pos = pos_;
  absl::string_view value;
  if (kind == kNotCanonical && attr == "literal") {
    // custom-call `literal=s32[2]{0} {1, 2}`: a shape, a space, a literal.
    // A tuple is `( s32[2]{0} {1, 2}, pred[] 0 )`.
    if (Cur() == '(') {
      size_t end;
      if (!ScanBalanced(&end)) return false;
      pos_ = end;
    } else {
      Shape literal_shape;
      if (!ParseShape(&literal_shape, 0)) return false;
      absl::string_view rest;
      if (!ScanValue(&rest)) return false;
    }
    value = text_.substr(value_pos, pos_ - value_pos);
    inst->mutable_raw_attributes()->push_back({std::string(attr), std::string(value)});
    inst->AppendAttributeName(attr);
    return true;
  }
  if (NamesComputations(kind) && Cur() == '{') {
    // An inline computation: `to_apply={ p = f32[] parameter(0) ... }`.
    size_t save = pos_;
    ++pos_;
    absl::string_view first_name;
    bool pct;
    bool inline_body = false;
    if (SkipSpace() && (IsIdentChar(Cur()) || Cur() == '%')) {
      quiet_ = true;
      if (LexName(&first_name, &pct, "") && SkipSpace()) {
        if (first_name == "ROOT") inline_body = true;
        inline_body = inline_body || Cur() == '=';
      }
      quiet_ = false;
    }
    pos_ = save;
    if (inline_body) {
      if (inline_depth_ >= kMaxInlineComputationDepth) {
        return Fail(value_pos, absl::StrCat("inline computations nested more than ",
                                            kMaxInlineComputationDepth, " deep"));
      }
      std::string comp_name = absl::StrCat(inst->name(), ".", attr);
      auto computation = HloComputation::CreateInArena(module_->instruction_arena(), comp_name);
      computation->mutable_text_info()->flags = kTextFlagsSet | kTextPercentName;
      HloComputation* comp = module_->AddComputation(std::move(computation));
      // The enclosing computation's resolution state is set aside (its
      // pending names point into its own text copies).
      ComputationState enclosing = std::exchange(cur_, ComputationState());
      ++inline_depth_;
      ++pos_;  // '{'
      bool ok_body = ResolveComputation(comp, value_pos);
      --inline_depth_;
      cur_ = std::move(enclosing);
      if (!ok_body) return false;
      inst->SetCalledComputations(attr, {comp}, false);
      inst->AppendAttributeName(attr);
      return true;
    }
  }
  // Replica groups and frontend attributes read before are known by the
  // bytes at the value's start.
  bool failed = false;
  const ReplicaGroups* known_groups =
      kind == kReplicaGroups ? FindKnownAt(known_groups_, &value, &failed) : nullptr;
  const FrontendAttributes* known_frontend =
      kind == kFrontendAttributes ? FindKnownAt(known_frontend_, &value, &failed) : nullptr;
  if (failed) return false;
  if (value.empty() && !ScanValue(&value)) return false;
  auto bad = [&](absl::string_view expected) {
    return Fail(value_pos, absl::StrCat("bad value for attribute '", attr, "': expected ", expected));
  };
  const HloOpcode op = inst->opcode();
  bool typed = true;
  switch (kind) {
    case kIndex: {
      if (op != HloOpcode::kGetTupleElement) {
        typed = false;
        break;
      }
      int64_t n;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size() || n < 0) {
        return bad("a non-negative integer");
      }
      if (!HloInstruction::IndexFits(n)) {
        return Fail(value_pos, absl::StrCat("tuple index ", n, " is too large (at most 2147483647)"));
      }
      inst->set_tuple_index(n);
      break;
    }
    case kDimensions: {
      std::vector<int64_t> dims;
      if (!ParseIntList(value, value_pos, &dims)) return false;
      inst->set_dimensions(std::move(dims));
      break;
    }
    case kLhsBatchDims:
    case kRhsBatchDims:
    case kLhsContractingDims:
    case kRhsContractingDims: {
      std::vector<int64_t> dims;
      if (!ParseIntList(value, value_pos, &dims)) return false;
      DotDimensionNumbers* dn = inst->mutable_dot_dimension_numbers();
      (kind == kLhsBatchDims         ? dn->lhs_batch_dimensions
       : kind == kRhsBatchDims       ? dn->rhs_batch_dimensions
       : kind == kLhsContractingDims ? dn->lhs_contracting_dimensions
                                     : dn->rhs_contracting_dimensions) = std::move(dims);
      break;
    }
    case kReplicaGroups: {
      // Collectives repeat a few group lists: the same text gets the same
      // (shared) contents, parsed once.
      if (known_groups == nullptr) known_groups = known_groups_.Find(value);
      if (known_groups != nullptr) {
        inst->set_replica_groups(*known_groups);
        break;
      }
      ReplicaGroups groups;
      if (!ParseReplicaGroups(value, value_pos, &groups)) return false;
      known_groups_.Add(value, groups);  // (a copy shares the contents)
      inst->set_replica_groups(std::move(groups));
      break;
    }
    case kChannelId: {
      int64_t n;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size()) return bad("an integer");
      inst->set_channel_id(n);
      break;
    }
    case kUseGlobalDeviceIds:
    case kConstrainLayout: {
      bool b = false;
      if (!ParseBool(value, value_pos, &b)) return false;
      if (kind == kUseGlobalDeviceIds) {
        inst->set_use_global_device_ids(b);
      } else {
        inst->set_constrain_layout(b);
      }
      break;
    }
    case kSourceTargetPairs: {
      std::vector<std::vector<int64_t>> lists;
      if (!ParseIntListList(value, value_pos, &lists)) return false;
      std::vector<std::pair<int64_t, int64_t>> pairs;
      pairs.reserve(lists.size());
      for (const auto& l : lists) {
        if (l.size() != 2) return bad("pairs {{source,target},...}");
        pairs.emplace_back(l[0], l[1]);
      }
      inst->set_source_target_pairs(std::move(pairs));
      break;
    }
    case kCustomCallTarget: {
      std::string target;
      if (!ParseString(value, value_pos, &target)) return false;
      inst->set_custom_call_target(std::move(target));
      break;
    }
    case kApiVersion: {
      std::optional<int> v = HloInstruction::ApiVersionFromName(value);
      if (!v.has_value()) {
        return Fail(value_pos, absl::StrCat("unknown api_version '", value, "'"));
      }
      inst->set_api_version(*v);
      break;
    }
    case kBackendConfig:
      if (value.front() == '"') {
        std::string config;
        if (!ParseString(value, value_pos, &config)) return false;
        inst->set_backend_config(std::move(config), false);
      } else if (value.front() == '{') {
        inst->set_backend_config(std::string(value), true);
      } else {
        typed = false;
      }
      break;
    case kFrontendAttributes: {
      // Values that are not strings (`k={n = 1 : i32}`) are not a key->value
      // map this project can hold: the attribute is then kept raw, verbatim.
      if (known_frontend == nullptr) known_frontend = known_frontend_.Find(value);
      if (known_frontend != nullptr) {
        *inst->mutable_frontend_attributes() = *known_frontend;
        break;
      }
      FrontendAttributes fa;
      quiet_ = true;  // a failure here is not an error
      const bool parsed = ParseFrontendAttributes(value, value_pos, &fa);
      quiet_ = false;
      if (parsed) {
        known_frontend_.Add(value, fa);
        *inst->mutable_frontend_attributes() = std::move(fa);
      } else if (value.size() >= 2 && value.front() == '{' && value.back() == '}') {
        typed = false;
      } else {
        return bad("{key=\"value\",...}");
      }
      break;
    }
    case kMetadata:
      if (value.size() < 2 || value.front() != '{' || value.back() != '}') return bad("{...}");
      inst->set_metadata(value.substr(1, value.size() - 2));
      break;
    case kSharding:
      inst->set_sharding(std::string(value));
      break;
    case kControlPredecessors: {
      if (value.size() < 2 || value.front() != '{' || value.back() != '}') return bad("{%a, %b, ...}");
      const size_t end = value.size() - 1;
      bool first = true;
      size_t control_count = 0;
      if (!ParseListIn(value, value_pos, 1, end, Separator::kCommaOrSpace, "", [&](size_t* i) {
            bool pct = value[*i] == '%';
            if (pct) ++*i;
            size_t s = *i;
            while (*i < end && IsIdentChar(value[*i])) ++*i;
            if (*i == s) {
              return Fail(value_pos + *i, "expected an instruction name in control-predecessors");
            }
            if (first && pct) *flags |= kTextPercentControl;
            first = false;
            if (++control_count > kMaxListedItems) {
              return Fail(value_pos + s, absl::StrCat("more than ", kMaxListedItems,
                                                      " control predecessors on one instruction"));
            }
            absl::string_view name = value.substr(s, *i - s);
            if (done_before_ != nullptr) name = cur_.operand_text.Copy(name);
            cur_.pending_control.push_back({inst, name, value_pos + s});
            return true;
          })) {
        return false;
      }
      break;
    }
    case kToApply:
    case kCondition:
    case kBody:
    case kCalls:
    case kBranchComputations:
    case kTrueComputation:
    case kFalseComputation:
    case kCalledComputations:
    case kSelect:
    case kScatter: {
      PendingCall call{inst, std::string(attr), {}, false};
      absl::string_view list = value;
      size_t base = value_pos;
      if (list.front() == '{') {
        if (list.back() != '}') return bad("{%a, %b, ...}");
        call.braced = true;
        list = list.substr(1, list.size() - 2);
        base += 1;
      }
      bool first = true;
      if (!ParseListIn(list, base, 0, list.size(), Separator::kCommaOrSpace, "", [&](size_t* i) {
            bool pct = list[*i] == '%';
            if (pct) ++*i;
            size_t s = *i;
            while (*i < list.size() && IsIdentChar(list[*i])) ++*i;
            if (*i == s) {
              return Fail(base + *i, absl::StrCat("expected a computation name in '", attr, "'"));
            }
            if (first && pct) *flags |= kTextPercentCalls;
            first = false;
            absl::string_view name = list.substr(s, *i - s);
            HloComputation* known = module_->GetComputationWithName(name);
            if (known == nullptr && done_before_ != nullptr) name = call_text_.Copy(name);
            call.names.push_back({name, base + s, known});
            return true;
          })) {
        return false;
      }
      if (!call.braced && call.names.size() != 1) return bad("one computation name");
      pending_calls_.push_back(std::move(call));
      break;
    }
    default:
      typed = false;
      break;
  }
  if (!typed) {
    inst->mutable_raw_attributes()->push_back({std::string(attr), std::string(value)});
  }
  if (kind != kNotCanonical) {
    inst->mutable_attribute_order()->AppendInterned(InternedName(kind));
  } else {
    inst->AppendAttributeName(attr);
  }
  return true;
}

// A known text was a whole value, which ends at top level, so scanning on
// from its end reads what ScanValue would have: the value is the known one
// if it ends there (`mesh[x=2]` then `mesh[x=2] {x}` are two values).
template <typename T>
const T* Parser::FindKnownAt(const KnownValues<T>& known, absl::string_view* value, bool* failed) {
  *value = absl::string_view();
  static const bool on = !EnvSwitchIsZero("HILO_PARSE_KNOWN_FIRST");
  if (!on) return nullptr;
  const size_t start = pos_;
  return known.FindPrefix(text_.substr(pos_), [&](size_t size) {
    pos_ += size;
    if (!ScanValueFrom(start, value)) {
      *failed = true;
      return false;
    }
    return value->size() == size;
  });
}

bool Parser::AttachCall(PendingCall& call) {
  // Inline for the usual one or few: no heap block per call.
  absl::InlinedVector<HloComputation*, 4> comps;
  comps.reserve(call.names.size());
  for (const CalledName& called : call.names) {
    HloComputation* c =
        called.known != nullptr ? called.known : module_->GetComputationWithName(called.name);
    if (c == nullptr) {
      return Fail(called.pos, absl::StrCat("unknown computation '", called.name, "'"));
    }
    comps.push_back(c);
  }
  call.inst->SetCalledComputations(call.attribute, comps, call.braced);
  return true;
}

void Parser::AttachKnownCalls(HloInstruction* inst, size_t begin) {
  for (size_t i = begin; i < pending_calls_.size(); ++i) {
    const PendingCall& call = pending_calls_[i];
    if (call.inst != inst) return;
    for (const CalledName& called : call.names) {
      if (called.known == nullptr) return;
    }
  }
  for (size_t i = begin; i < pending_calls_.size(); ++i) AttachCall(pending_calls_[i]);
  pending_calls_.erase(pending_calls_.begin() + static_cast<std::ptrdiff_t>(begin),
                       pending_calls_.end());
}

bool Parser::ResolveCalls() {
  for (PendingCall& call : pending_calls_) {
    if (!AttachCall(call)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Typed attribute values
// ---------------------------------------------------------------------------

// The common form of an integer list, `{1,2,3}` or `{}` (non-negative,
// at most 18 digits each, no spaces), read in one pass without the general
// list machinery. Returns false, leaving `out` as it was, on anything else:
// the general path then reads it or reports the error.
// `HILO_PARSE_SHORT_INT_LISTS=0` turns it off.
bool ParseShortIntList(absl::string_view v, std::vector<int64_t>* out) {
  constexpr size_t kMaxValues = 16;
  constexpr int kMaxDigits = 18;  // below 2^63 whatever the digits
  int64_t values[kMaxValues];
  size_t count = 0;
  const char* p = v.data() + 1;
  const char* const end = v.data() + v.size() - 1;  // the '}'
  while (p != end) {
    if (count == kMaxValues) return false;
    if (count > 0) {
      if (*p != ',') return false;
      ++p;
    }
    int64_t n = 0;
    int digits = 0;
    for (; p != end && IsDigit(*p); ++p, ++digits) {
      if (digits == kMaxDigits) return false;  // before n * 10 could overflow
      n = n * 10 + (*p - '0');
    }
    if (digits == 0) return false;
    values[count++] = n;
  }
  out->insert(out->end(), values, values + count);
  return true;
}

// `{1,2,3}` or `{}`.
bool Parser::ParseIntList(absl::string_view v, size_t base, std::vector<int64_t>* out) {
  if (v.size() < 2 || v.front() != '{' || v.back() != '}') {
    return Fail(base, "expected a list of integers {a,b,...}");
  }
  static const bool short_lists = !EnvSwitchIsZero("HILO_PARSE_SHORT_INT_LISTS");
  if (short_lists && ParseShortIntList(v, out)) return true;
  // One allocation per list: the values are counted by their separators.
  out->reserve(out->size() + 1 + std::count(v.begin(), v.end(), ','));
  const size_t end = v.size() - 1;
  return ParseListIn(v, base, 1, end, Separator::kComma, "expected ',' in a list of integers",
                     [&](size_t* i) {
                       size_t s = *i;
                       if (v[*i] == '-') ++*i;
                       while (*i < end && IsDigit(v[*i])) ++*i;
                       int64_t n;
                       auto [ptr, ec] = std::from_chars(v.data() + s, v.data() + *i, n);
                       if (ec == std::errc::result_out_of_range) {
                         return Fail(base + s, "integer overflow: the value does not fit in 64 bits");
                       }
                       if (ec != std::errc() || ptr != v.data() + *i) {
                         return Fail(base + s, "expected an integer");
                       }
                       out->push_back(n);
                       return true;
                     });
}

// `{{0,1},{2,3}}` or `{}`.
bool Parser::ParseIntListList(absl::string_view v, size_t base,
                              std::vector<std::vector<int64_t>>* out) {
  if (v.size() < 2 || v.front() != '{' || v.back() != '}') {
    return Fail(base, "expected a list of integer lists {{a,b},...}");
  }
  out->reserve(out->size() + std::count(v.begin(), v.end(), '{') - 1);
  const size_t end = v.size() - 1;
  return ParseListIn(v, base, 1, end, Separator::kCommaOrSpace, "", [&](size_t* i) {
    if (v[*i] != '{') return Fail(base + *i, "expected '{' starting a list of integers");
    size_t close = v.find('}', *i);
    if (close == absl::string_view::npos || close > end) return Fail(base + *i, "unbalanced '{'");
    out->emplace_back();
    if (!ParseIntList(v.substr(*i, close - *i + 1), base + *i, &out->back())) return false;
    *i = close + 1;
    return true;
  });
}

bool Parser::ParseReplicaGroups(absl::string_view v, size_t base, ReplicaGroups* out) {
  if (v.front() == '{') {
    std::vector<std::vector<int64_t>> groups;
    if (!ParseIntListList(v, base, &groups)) return false;
    *out = ReplicaGroups::Explicit(std::move(groups));
    return true;
  }
  if (v.front() != '[') {
    *out = ReplicaGroups::Raw(std::string(v));  // e.g. `mesh[...]`
    return true;
  }
  // `[G,S]<=[d0,d1,...]` with an optional `T(p0,p1,...)`.
  auto bracket_list = [&](size_t* i, char open, char close, std::vector<int64_t>* list) {
    if (*i >= v.size() || v[*i] != open) {
      return Fail(base + *i, absl::StrCat("expected '", std::string(1, open),
                                          "' in iota replica groups"));
    }
    size_t c = v.find(close, *i);
    if (c == absl::string_view::npos) return Fail(base + *i, "unbalanced iota replica groups");
    std::string braced = absl::StrCat("{", v.substr(*i + 1, c - *i - 1), "}");
    // ParseIntList reports offsets relative to the braced copy; they line up
    // with the original because '{' replaces the opening bracket.
    if (!ParseIntList(braced, base + *i, list)) return false;
    *i = c + 1;
    return true;
  };
  size_t i = 0;
  std::vector<int64_t> head;
  IotaReplicaGroupList iota;
  if (!bracket_list(&i, '[', ']', &head)) return false;
  if (head.size() != 2) return Fail(base, "iota replica groups need [num_groups,group_size]");
  iota.num_groups = head[0];
  iota.group_size = head[1];
  if (v.substr(i, 2) != "<=") return Fail(base + i, "expected '<=' in iota replica groups");
  i += 2;
  if (!bracket_list(&i, '[', ']', &iota.reshape_dims)) return false;
  if (i < v.size() && v[i] == 'T') {
    ++i;
    if (!bracket_list(&i, '(', ')', &iota.transpose_perm)) return false;
  }
  if (i != v.size()) return Fail(base + i, "unexpected text after iota replica groups");
  *out = ReplicaGroups::Iota(std::move(iota));
  return true;
}

bool Parser::ParseBool(absl::string_view v, size_t base, bool* out) {
  if (v == "true") {
    *out = true;
  } else if (v == "false") {
    *out = false;
  } else {
    return Fail(base, "expected true or false");
  }
  return true;
}

bool Parser::ParseString(absl::string_view v, size_t base, std::string* out) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') {
    return Fail(base, "expected a quoted string");
  }
  absl::string_view body = v.substr(1, v.size() - 2);
  if (body.find('\\') == absl::string_view::npos) {
    *out = std::string(body);
    return true;
  }
  std::string error;
  if (!absl::CUnescape(body, out, &error)) {
    return Fail(base, absl::StrCat("bad escape in string: ", error));
  }
  return true;
}

// `{key="value",key2="value2"}`; values unescaped, order kept.
bool Parser::ParseFrontendAttributes(absl::string_view v, size_t base, FrontendAttributes* out) {
  if (v.size() < 2 || v.front() != '{' || v.back() != '}') {
    return Fail(base, "expected frontend_attributes={key=\"value\",...}");
  }
  const size_t end = v.size() - 1;
  return ParseListIn(v, base, 1, end, Separator::kComma, "expected ',' between frontend attributes",
                     [&](size_t* at) {
    size_t& i = *at;
    size_t ks = i;
    std::string key;
    if (v[i] == '"') {
      size_t j = i + 1;
      while (j < end && v[j] != '"') j += v[j] == '\\' ? 2 : 1;
      if (j >= end) return Fail(base + i, "unterminated string");
      if (!ParseString(v.substr(i, j + 1 - i), base + i, &key)) return false;
      i = j + 1;
    } else {
      while (i < end && IsIdentChar(v[i])) ++i;
      key = std::string(v.substr(ks, i - ks));
    }
    if (key.empty() && i == ks) return Fail(base + i, "expected a frontend attribute key");
    if (i >= end || v[i] != '=') return Fail(base + i, "expected '=' after a frontend attribute key");
    ++i;
    if (i >= end || v[i] != '"') return Fail(base + i, "expected a quoted frontend attribute value");
    size_t j = i + 1;
    while (j < end && v[j] != '"') j += v[j] == '\\' ? 2 : 1;
    if (j >= end) return Fail(base + i, "unterminated string");
    std::string value;
    if (!ParseString(v.substr(i, j + 1 - i), base + i, &value)) return false;
    if (out->size() >= kMaxListedItems) {
      return Fail(base + ks, absl::StrCat("more than ", kMaxListedItems, " frontend attributes"));
    }
    if (out->Contains(key)) return Fail(base + ks, absl::StrCat("duplicate frontend attribute '", key, "'"));
    out->Append(key, value);
    i = j + 1;
    return true;
  });
}

}  // namespace

absl::StatusOr<std::vector<Shape>> Parser::RunShapeList() {
  const InputCheck check = CheckInput(text_);
  if (check.problem != nullptr) {
    Fail(check.problem_offset, check.problem);
    return error_;
  }
  std::vector<Shape> shapes;
  if (!SkipSpace()) return error_;
  while (!AtEnd()) {
    shapes.emplace_back();
    if (!ParseShape(&shapes.back(), 0) || !SkipSpace()) return error_;
    if (AtEnd()) break;
    if (Cur() != ',') {
      Fail(pos_, "expected ',' between shapes");
      return error_;
    }
    ++pos_;
  }
  return shapes;
}

absl::StatusOr<std::vector<Shape>> ParseShapeList(absl::string_view text) {
  Parser parser(text, "<shapes>");
  return parser.RunShapeList();
}

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(absl::string_view text,
                                                          absl::string_view filename) {
  Parser parser(text, filename);
  return parser.Run();
}

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(
    absl::string_view text, absl::string_view filename,
    const std::function<void(size_t)>& done_before) {
  Parser parser(text, filename, done_before ? &done_before : nullptr);
  return parser.Run();
}


}  // namespace hilo
