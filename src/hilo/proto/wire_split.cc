#include "hilo/proto/wire_split.h"

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

std::optional<int64_t> ScanVarintField(absl::string_view bytes, int field) {
  const uint32_t wanted = WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_VARINT);
  uint64_t value = 0;
  const bool ok = WalkFields(bytes, [&](uint32_t tag, CodedInputStream& in) {
    if (tag == wanted) return in.ReadVarint64(&value);
    return WireFormatLite::SkipField(&in, tag);
  });
  if (!ok) return std::nullopt;
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
