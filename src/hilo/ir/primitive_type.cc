#include "hilo/ir/primitive_type.h"

#include "hilo/ir/name_table.h"

namespace hilo {
namespace {

struct TypeInfo {
  absl::string_view name;
  int bits;
  char kind;
};

constexpr TypeInfo kTypeInfo[] = {
#define HILO_TYPE_INFO(e, text, bits, kind) {text, bits, kind},
    HILO_PRIMITIVE_TYPE_LIST(HILO_TYPE_INFO)
#undef HILO_TYPE_INFO
};

const TypeInfo& Info(PrimitiveType type) { return kTypeInfo[static_cast<int>(type)]; }

}  // namespace

absl::string_view PrimitiveTypeName(PrimitiveType type) { return Info(type).name; }

std::optional<PrimitiveType> StringToPrimitiveType(absl::string_view name) {
  static const auto* const kByName = [] {
    auto* table = new NameTable<PrimitiveType>();
    for (size_t i = 0; i < sizeof(kTypeInfo) / sizeof(kTypeInfo[0]); ++i) {
      if (kTypeInfo[i].kind == 'T' || kTypeInfo[i].kind == 'b') continue;
      table->Add(kTypeInfo[i].name, static_cast<PrimitiveType>(i));
    }
    return table;
  }();
  return kByName->Find(name);
}

int BitWidth(PrimitiveType type) { return Info(type).bits; }

int64_t ByteWidth(PrimitiveType type) {
  int bits = Info(type).bits;
  return bits == 0 ? 0 : (bits + 7) / 8;
}

bool IsArrayType(PrimitiveType type) {
  char k = Info(type).kind;
  return k != 't' && k != 'o' && k != 'T' && k != 'b';
}
bool IsIntegralType(PrimitiveType type) {
  char k = Info(type).kind;
  return k == 's' || k == 'u';
}
bool IsSignedIntegralType(PrimitiveType type) { return Info(type).kind == 's'; }
bool IsUnsignedIntegralType(PrimitiveType type) { return Info(type).kind == 'u'; }
bool IsFloatingPointType(PrimitiveType type) { return Info(type).kind == 'f'; }
bool IsComplexType(PrimitiveType type) { return Info(type).kind == 'c'; }

}  // namespace hilo
