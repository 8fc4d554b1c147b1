#include "hilo/proto/wire_split.h"

#include <cstdint>

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

bool SplitField(absl::string_view bytes, int field, std::vector<absl::string_view>* payloads,
                std::string* rest) {
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
bool ReadRawVarint(const uint8_t** p, const uint8_t* end, int max_bytes, uint64_t* value) {
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
