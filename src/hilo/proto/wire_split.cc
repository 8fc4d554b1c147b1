#include "hilo/proto/wire_split.h"

#include <cstdint>
#include <cstring>

#include "hilo/ir/env_switch.h"
#include "hilo/proto/hlo.pb.h"

#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace hilo {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

CodedInputStream StreamOver(absl::string_view bytes) {
  return CodedInputStream(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
}

// Walks the top-level fields of `bytes`: `on_field(tag, in)` reads or
// skips the field after its tag (false: malformed). False when the bytes
// are not a well-formed message: a zero tag or an end-group tag at the top
// level (protobuf's parser refuses both), or a field `on_field` refuses.
template <typename OnField>
bool WalkFields(absl::string_view bytes, OnField on_field) {
  CodedInputStream in = StreamOver(bytes);
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();  // the end, or a zero tag
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_END_GROUP) return false;
    if (!on_field(tag, in)) return false;
  }
}

}  // namespace

int DefaultProtoRecursionBudget() { return CodedInputStream::GetDefaultRecursionLimit(); }

namespace {
bool SplitFieldQuickly(absl::string_view bytes, int field, std::vector<absl::string_view>* payloads,
                       std::string* rest);
}  // namespace

bool SplitField(absl::string_view bytes, int field, std::vector<absl::string_view>* payloads,
                std::string* rest) {
  // The common wire types by hand (a computation's every instruction: its
  // CodedInputStream walk was 1.4% of reading the 300k module); anything
  // unusual is left to CodedInputStream, from the start, which gives the
  // exact answer (HILO_PROTO_QUICK_SPLIT=0: always).
  static const bool quick = !EnvSwitchIsZero("HILO_PROTO_QUICK_SPLIT");
  const size_t payloads_before = payloads->size(), rest_before = rest->size();
  if (quick && SplitFieldQuickly(bytes, field, payloads, rest)) return true;
  payloads->resize(payloads_before);
  rest->resize(rest_before);
  const uint32_t selected = WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  // Where the field being read started: its tag's first byte.
  int field_start = 0;
  return WalkFields(bytes, [&](uint32_t tag, CodedInputStream& in) {
    if (tag == selected) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      const int at = in.CurrentPosition();
      if (length > bytes.size() - static_cast<size_t>(at)) return false;
      payloads->push_back(bytes.substr(at, length));
      in.Skip(static_cast<int>(length));
    } else {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      rest->append(bytes.data() + field_start, in.CurrentPosition() - field_start);
    }
    field_start = in.CurrentPosition();
    return true;
  });
}

namespace {

// A varint of at most `max_bytes` bytes at `*p` (before `end`); false when
// it is longer or cut off.
inline bool ReadRawVarint(const uint8_t** p, const uint8_t* end, int max_bytes, uint64_t* value) {
  // One and two bytes first (tags, lengths, most ids).
  const uint8_t* q = *p;
  if (q < end && q[0] < 0x80) {
    *value = q[0];
    *p = q + 1;
    return true;
  }
  if (end - q >= 2 && q[1] < 0x80) {
    *value = (q[0] & 0x7fu) | (static_cast<uint64_t>(q[1]) << 7);
    *p = q + 2;
    return true;
  }
  // Three bytes (ids from 16384 on: most operand ids of a large module).
  if (end - q >= 3 && q[2] < 0x80 && max_bytes >= 3) {
    *value = (q[0] & 0x7fu) | (static_cast<uint64_t>(q[1] & 0x7fu) << 7) | (static_cast<uint64_t>(q[2]) << 14);
    *p = q + 3;
    return true;
  }
  uint64_t v = 0;
  for (int i = 0; i < max_bytes && *p < end; ++i) {
    const uint8_t b = *(*p)++;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *value = v;
      return true;
    }
  }
  return false;
}

// SplitField for fields of wire types 0, 1, 2 and 5 with tags and lengths
// of at most 5 bytes; false for anything else (then CodedInputStream
// decides).
bool SplitFieldQuickly(absl::string_view bytes, int field, std::vector<absl::string_view>* payloads,
                       std::string* rest) {
  const uint8_t* const begin = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* p = begin;
  const uint8_t* const end = p + bytes.size();
  while (p < end) {
    const uint8_t* const field_start = p;
    uint64_t tag = 0, v = 0;
    if (!ReadRawVarint(&p, end, 5, &tag) || tag > UINT32_MAX || (tag >> 3) == 0) return false;
    switch (tag & 7) {
      case WireFormatLite::WIRETYPE_VARINT:
        if (!ReadRawVarint(&p, end, 10, &v)) return false;
        break;
      case WireFormatLite::WIRETYPE_FIXED64:
        if (end - p < 8) return false;
        p += 8;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED:
        if (!ReadRawVarint(&p, end, 5, &v) || v > static_cast<uint64_t>(end - p)) return false;
        if ((tag >> 3) == static_cast<uint64_t>(field)) {
          payloads->push_back(absl::string_view(reinterpret_cast<const char*>(p), v));
          p += v;
          continue;
        }
        p += v;
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        if (end - p < 4) return false;
        p += 4;
        break;
      default:
        return false;
    }
    rest->append(reinterpret_cast<const char*>(field_start), static_cast<size_t>(p - field_start));
  }
  return true;
}

std::optional<int64_t> ScanVarintFieldSlowly(absl::string_view bytes, int field) {
  const uint32_t wanted = WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_VARINT);
  uint64_t value = 0;
  const bool ok = WalkFields(bytes, [&](uint32_t tag, CodedInputStream& in) {
    if (tag == wanted) return in.ReadVarint64(&value);
    return WireFormatLite::SkipField(&in, tag);
  });
  if (!ok) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace

std::optional<int64_t> ScanVarintField(absl::string_view bytes, int field) {
  // The common wire types by hand (this runs once per instruction of a
  // computation whose instruction order is recorded); anything unusual (a
  // group, field number 0, an overlong or cut-off field) is left to
  // CodedInputStream, which gives the exact answer.
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  uint64_t value = 0;
  while (p < end) {
    uint64_t tag = 0;
    if (!ReadRawVarint(&p, end, 5, &tag) || tag > UINT32_MAX || (tag >> 3) == 0) {
      return ScanVarintFieldSlowly(bytes, field);
    }
    uint64_t v = 0;
    switch (tag & 7) {
      case WireFormatLite::WIRETYPE_VARINT:
        if (!ReadRawVarint(&p, end, 10, &v)) return ScanVarintFieldSlowly(bytes, field);
        if ((tag >> 3) == static_cast<uint64_t>(field)) value = v;
        break;
      case WireFormatLite::WIRETYPE_FIXED64:
        if (end - p < 8) return ScanVarintFieldSlowly(bytes, field);
        p += 8;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED:
        if (!ReadRawVarint(&p, end, 5, &v) || v > static_cast<uint64_t>(end - p)) {
          return ScanVarintFieldSlowly(bytes, field);
        }
        p += v;
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        if (end - p < 4) return ScanVarintFieldSlowly(bytes, field);
        p += 4;
        break;
      default:
        return ScanVarintFieldSlowly(bytes, field);
    }
  }
  return static_cast<int64_t>(value);
}

bool ParseAtDepth(absl::string_view bytes, int recursion_budget, google::protobuf::MessageLite* message) {
  message->Clear();
  if (recursion_budget < 0) return false;
  CodedInputStream in = StreamOver(bytes);
  in.SetRecursionLimit(recursion_budget);
  return message->MergePartialFromCodedStream(&in) && in.ConsumedEntireMessage();
}

absl::string_view JoinPayloads(const std::vector<absl::string_view>& payloads, std::string* storage) {
  if (payloads.size() == 1) return payloads.front();
  storage->clear();
  for (absl::string_view p : payloads) storage->append(p.data(), p.size());
  return *storage;
}

}  // namespace hilo

namespace hilo {
namespace {

// Bounds-checked reading of the wire format's pieces; every refusal sends the
// instruction to protobuf's parser, so only the plain forms are accepted.
class WireCursor {
 public:
  explicit WireCursor(absl::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}
  bool done() const { return p_ == end_; }
  const char* position() const { return reinterpret_cast<const char*>(p_); }
  // A varint of at most 10 bytes whose bits fit 64 (protobuf drops
  // overflowing bits; such a varint is refused here instead).
  bool Varint(uint64_t* v) {
    if (p_ < end_ && *p_ < 0x80) {  // the common one-byte case
      *v = *p_++;
      return true;
    }
    const uint8_t* start = p_;
    if (!ReadRawVarint(&p_, end_, 10, v)) return false;
    return p_ - start < 10 || p_[-1] <= 1;
  }
  // A tag: at most 5 bytes, 32 bits, field number at least 1.
  bool Tag(uint32_t* tag) {
    uint64_t v = 0;
    if (!ReadRawVarint(&p_, end_, 5, &v) || v > UINT32_MAX || (v >> 3) == 0) return false;
    *tag = static_cast<uint32_t>(v);
    return true;
  }
  // A length-delimited payload (a length of at most 5 bytes).
  bool Payload(absl::string_view* payload) {
    uint64_t n = 0;
    if (!ReadRawVarint(&p_, end_, 5, &n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *payload = absl::string_view(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  bool Skip(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) return false;
    p_ += n;
    return true;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

bool IsAscii(absl::string_view s) {
  // Eight bytes at a time (every instruction's name and opcode).
  size_t i = 0;
  uint64_t high = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, s.data() + i, 8);
    high |= word;
  }
  if (i < s.size() && s.size() >= 8) {
    // The last 8 bytes (some seen already) instead of the rest byte by byte.
    uint64_t word;
    std::memcpy(&word, s.data() + s.size() - 8, 8);
    high |= word;
    i = s.size();
  }
  for (; i < s.size(); ++i) high |= static_cast<unsigned char>(s[i]);
  return (high & 0x8080808080808080ull) == 0;
}

// A repeated integer field: one varint, or a packed run of them; each at
// most `max` (else false).
template <typename T>
bool ReadRepeated(uint32_t wire_type, WireCursor& in, std::vector<T>* out, uint64_t max) {
  uint64_t v = 0;
  if (wire_type == WireFormatLite::WIRETYPE_VARINT) {
    if (!in.Varint(&v) || v > max) return false;
    out->push_back(static_cast<T>(v));
    return true;
  }
  absl::string_view packed;
  if (wire_type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || !in.Payload(&packed)) return false;
  WireCursor values(packed);
  while (!values.done()) {
    if (!values.Varint(&v) || v > max) return false;
    out->push_back(static_cast<T>(v));
  }
  return true;
}

// A repeated int64 field.
bool ReadRepeatedInt64(uint32_t wire_type, WireCursor& in, std::vector<int64_t>* out) {
  return ReadRepeated(wire_type, in, out, UINT64_MAX);
}

// The fields of message `payload`, each given to `on_field(number,
// wire_type, in)`, which reads it (false: refused).
template <typename OnField>
bool ForEachField(absl::string_view payload, OnField on_field) {
  WireCursor in(payload);
  while (!in.done()) {
    uint32_t tag = 0;
    if (!in.Tag(&tag) || !on_field(tag >> 3, tag & 7, in)) return false;
  }
  return true;
}

// hilo_text holding only flags (1) and attribute_order (2), within range
// (else protobuf reads it: false).
bool ReadSimpleText(absl::string_view payload, WireInstruction* out) {
  return ForEachField(payload, [&](uint32_t number, uint32_t wire_type, WireCursor& in) {
    uint64_t v = 0;
    if (number == 1) {
      if (wire_type != WireFormatLite::WIRETYPE_VARINT || !in.Varint(&v) || v > UINT32_MAX) return false;
      out->has_flags = true;
      out->flags = static_cast<uint32_t>(v);
      return true;
    }
    return number == 2 && ReadRepeated(wire_type, in, &out->attribute_order, INT32_MAX);
  });
}

// One ReplicaGroup holding only replica_ids (1).
bool ReadReplicaGroup(absl::string_view payload, std::vector<int64_t>* ids) {
  ids->clear();
  return ForEachField(payload, [&](uint32_t number, uint32_t wire_type, WireCursor& in) {
    return number == 1 && ReadRepeatedInt64(wire_type, in, ids);
  });
}

}  // namespace

bool ReadReplicaGroups(absl::string_view fields, std::vector<std::vector<int64_t>>* groups) {
  groups->clear();
  return ForEachField(fields, [&](uint32_t number, uint32_t wire_type, WireCursor& in) {
    absl::string_view payload;
    if (number != 49 || wire_type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || !in.Payload(&payload)) {
      return false;
    }
    return ReadReplicaGroup(payload, &groups->emplace_back());
  });
}

// FrontendAttributes: map entries (1), each a key (1) and a value (2), ASCII.
bool ReadFrontendAttributes(absl::string_view payload,
                            std::vector<std::pair<absl::string_view, absl::string_view>>* entries) {
  entries->clear();
  return ForEachField(payload, [&](uint32_t number, uint32_t wire_type, WireCursor& in) {
    absl::string_view entry;
    if (number != 1 || wire_type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || !in.Payload(&entry)) return false;
    absl::string_view key, value;
    const bool ok = ForEachField(entry, [&](uint32_t n, uint32_t w, WireCursor& e) {
      absl::string_view s;
      if ((n != 1 && n != 2) || w != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || !e.Payload(&s) || !IsAscii(s)) {
        return false;
      }
      (n == 1 ? key : value) = s;
      return true;
    });
    if (!ok) return false;
    for (auto& [k, v] : *entries) {
      if (k == key) {
        v = value;
        return true;
      }
    }
    entries->emplace_back(key, value);
    return true;
  });
}

namespace {

// DotDimensionNumbers: four repeated int64 fields.
bool ReadDot(absl::string_view payload, WireInstruction* out) {
  return ForEachField(payload, [&](uint32_t number, uint32_t wire_type, WireCursor& in) {
    return number >= 1 && number <= 4 && ReadRepeatedInt64(wire_type, in, &out->dot[number - 1]);
  });
}

}  // namespace

bool ProgramShapeParses(absl::string_view bytes, int recursion_budget, absl::flat_hash_set<std::string>* parsed_shapes) {
  auto exactly = [&] {
    google::protobuf::Arena arena;
    auto* scratch = google::protobuf::Arena::CreateMessage<xla::ProgramShapeProto>(&arena);
    return ParseAtDepth(bytes, recursion_budget, scratch);
  };
  if (recursion_budget < 1) return exactly();
  xla::ShapeProto shape;
  std::string key;
  WireCursor in(bytes);
  while (!in.done()) {
    uint32_t tag = 0;
    absl::string_view payload;
    // parameters (1), result (2): ShapeProto; parameter_names (3): UTF-8.
    if (!in.Tag(&tag) || (tag != 0x0a && tag != 0x12 && tag != 0x1a) || !in.Payload(&payload)) return exactly();
    if (tag == 0x1a) {
      if (!WireFormatLite::VerifyUtf8String(payload.data(), static_cast<int>(payload.size()),
                                            WireFormatLite::PARSE, "")) {
        return false;
      }
    } else {
      // (Keyed by the budget too: a shape may parse at one depth only.)
      key.assign(reinterpret_cast<const char*>(&recursion_budget), sizeof(recursion_budget));
      key.append(payload.data(), payload.size());
      if (parsed_shapes->contains(key)) continue;
      if (!ParseAtDepth(payload, recursion_budget - 1, &shape)) return false;
      parsed_shapes->insert(key);
    }
  }
  return true;
}

bool ReadWireInstruction(absl::string_view bytes, WireInstruction* out) {
  out->name = out->opcode = out->shape = out->metadata = absl::string_view();
  out->has_shape = out->has_metadata = out->has_text = out->has_flags = false;
  out->has_frontend_attributes = out->has_dot = false;
  out->id = out->parameter_number = out->tuple_index = out->channel_id = 0;
  out->flags = 0;
  out->operand_ids.clear();
  out->control_predecessor_ids.clear();
  out->called_computation_ids.clear();
  out->dimensions.clear();
  out->attribute_order.clear();
  out->replica_groups = absl::string_view();
  out->group_count = 0;
  out->frontend_attributes = absl::string_view();
  for (std::vector<int64_t>& d : out->dot) d.clear();
  out->rest.clear();
  bool text_in_rest = false;
  absl::string_view frontend_field;  // its bytes, tag included
  WireCursor in(bytes);
  while (!in.done()) {
    const char* field_start = in.position();
    uint32_t tag = 0;
    if (!in.Tag(&tag)) return false;
    const uint32_t wire_type = tag & 7;
    const bool varint = wire_type == WireFormatLite::WIRETYPE_VARINT;
    const bool delimited = wire_type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    uint64_t v = 0;
    absl::string_view payload;
    switch (tag >> 3) {
      case 1:  // name
      case 2:  // opcode
        if (!delimited || !in.Payload(&payload) || !IsAscii(payload)) return false;
        ((tag >> 3) == 1 ? out->name : out->opcode) = payload;
        continue;
      case 3:  // shape
      case 7: {  // metadata
        bool& seen = (tag >> 3) == 3 ? out->has_shape : out->has_metadata;
        if (!delimited || seen || !in.Payload(&payload)) return false;
        seen = true;
        ((tag >> 3) == 3 ? out->shape : out->metadata) = payload;
        continue;
      }
      case 9:   // parameter_number
      case 13:  // tuple_index
      case 35:  // id
        if (!varint || !in.Varint(&v)) return false;
        ((tag >> 3) == 9 ? out->parameter_number : (tag >> 3) == 13 ? out->tuple_index : out->id) =
            static_cast<int64_t>(v);
        continue;
      case 36:
        if (!ReadRepeatedInt64(wire_type, in, &out->operand_ids)) return false;
        continue;
      case 37:
        if (!ReadRepeatedInt64(wire_type, in, &out->control_predecessor_ids)) return false;
        continue;
      case 38:
        if (!ReadRepeatedInt64(wire_type, in, &out->called_computation_ids)) return false;
        continue;
      case 14:
        if (!ReadRepeatedInt64(wire_type, in, &out->dimensions)) return false;
        continue;
      case 26:  // channel_id
        if (!varint || !in.Varint(&v)) return false;
        out->channel_id = static_cast<int64_t>(v);
        continue;
      case 49: {  // replica_groups
        if (!delimited || !in.Payload(&payload)) return false;
        if (out->group_count > 0 && out->replica_groups.data() + out->replica_groups.size() != field_start) {
          return false;
        }
        if (out->group_count++ == 0) out->replica_groups = absl::string_view(field_start, 0);
        out->replica_groups = absl::string_view(out->replica_groups.data(),
                                                static_cast<size_t>(in.position() - out->replica_groups.data()));
        continue;
      }
      case 68:  // frontend_attributes
        if (!delimited || out->has_frontend_attributes || !in.Payload(&payload)) return false;
        out->has_frontend_attributes = true;
        out->frontend_attributes = payload;
        frontend_field = absl::string_view(field_start, in.position() - field_start);
        continue;
      case 30:  // dot_dimension_numbers
        if (!delimited || out->has_dot || !in.Payload(&payload) || !ReadDot(payload, out)) return false;
        out->has_dot = true;
        continue;
      case 100001:  // hilo_text
        if (!delimited || out->has_text || text_in_rest || !in.Payload(&payload)) return false;
        if (ReadSimpleText(payload, out)) {
          out->has_text = true;
          continue;
        }
        out->has_flags = false;
        out->attribute_order.clear();
        text_in_rest = true;
        break;
      default:
        break;
    }
    // Another field: skipped here, its bytes kept for protobuf.
    bool ok = text_in_rest && (tag >> 3) == 100001;  // already read
    if (!ok) switch (wire_type) {
      case WireFormatLite::WIRETYPE_VARINT: ok = in.Varint(&v); break;
      case WireFormatLite::WIRETYPE_FIXED64: ok = in.Skip(8); break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: ok = in.Payload(&payload); break;
      case WireFormatLite::WIRETYPE_FIXED32: ok = in.Skip(4); break;
      default: return false;  // groups, invalid wire types
    }
    if (!ok) return false;
    out->rest.append(field_start, in.position() - field_start);
  }
  // hilo_text may order the frontend attributes: then protobuf reads both.
  if (text_in_rest && out->has_frontend_attributes) {
    out->has_frontend_attributes = false;
    out->frontend_attributes = absl::string_view();
    out->rest.append(frontend_field.data(), frontend_field.size());
  }
  return true;
}

}  // namespace hilo
