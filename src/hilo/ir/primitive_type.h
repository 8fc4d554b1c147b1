// PrimitiveType: the element types of HLO arrays, with their XLA text names.
#ifndef HILO_IR_PRIMITIVE_TYPE_H_
#define HILO_IR_PRIMITIVE_TYPE_H_

#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

namespace hilo {

// V(enumerator, text name, size in bits (0 for non-array types), kind)
// kind: 'p' pred, 's' signed int, 'u' unsigned int, 'f' float, 'c' complex,
//       't' token, 'o' opaque, 'T' tuple, 'b' buffer (XLA's `b(shape)`).
#define HILO_PRIMITIVE_TYPE_LIST(V) \
  V(PRED, "pred", 8, 'p')                  \
  V(S2, "s2", 2, 's')                      \
  V(S4, "s4", 4, 's')                      \
  V(S8, "s8", 8, 's')                      \
  V(S16, "s16", 16, 's')                   \
  V(S32, "s32", 32, 's')                   \
  V(S64, "s64", 64, 's')                   \
  V(U2, "u2", 2, 'u')                      \
  V(U4, "u4", 4, 'u')                      \
  V(U8, "u8", 8, 'u')                      \
  V(U16, "u16", 16, 'u')                   \
  V(U32, "u32", 32, 'u')                   \
  V(U64, "u64", 64, 'u')                   \
  V(F16, "f16", 16, 'f')                   \
  V(BF16, "bf16", 16, 'f')                 \
  V(F32, "f32", 32, 'f')                   \
  V(F64, "f64", 64, 'f')                   \
  V(C64, "c64", 64, 'c')                   \
  V(C128, "c128", 128, 'c')                \
  V(F8E5M2, "f8e5m2", 8, 'f')              \
  V(F8E4M3FN, "f8e4m3fn", 8, 'f')          \
  V(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8, 'f') \
  V(F8E5M2FNUZ, "f8e5m2fnuz", 8, 'f')      \
  V(F8E4M3FNUZ, "f8e4m3fnuz", 8, 'f')      \
  V(F8E4M3, "f8e4m3", 8, 'f')              \
  V(F8E3M4, "f8e3m4", 8, 'f')              \
  V(F4E2M1FN, "f4e2m1fn", 4, 'f')          \
  V(F8E8M0FNU, "f8e8m0fnu", 8, 'f')        \
  V(TOKEN, "token", 0, 't')                \
  V(OPAQUE_TYPE, "opaque", 0, 'o')         \
  V(TUPLE, "tuple", 0, 'T')                \
  V(BUFFER, "buffer", 0, 'b')

enum class PrimitiveType : uint8_t {
#define HILO_DECLARE_PRIMITIVE_TYPE(e, text, bits, kind) e,
  HILO_PRIMITIVE_TYPE_LIST(HILO_DECLARE_PRIMITIVE_TYPE)
#undef HILO_DECLARE_PRIMITIVE_TYPE
};

// The name XLA prints ("bf16", "pred", "token"...).
absl::string_view PrimitiveTypeName(PrimitiveType type);
// Inverse of PrimitiveTypeName; nullopt for an unknown name. "tuple" and
// "buffer" are not names the text format uses for an element type, so they
// are not accepted.
std::optional<PrimitiveType> StringToPrimitiveType(absl::string_view name);

// Size of one element in bits (4 for s4, 16 for bf16); 0 for token, opaque, tuple.
int BitWidth(PrimitiveType type);
// Size of one element in bytes, rounding sub-byte types up to 1; 0 for
// token, opaque and tuple. (XLA's ByteWidth.)
int64_t ByteWidth(PrimitiveType type);

bool IsArrayType(PrimitiveType type);  // every type but token, opaque, tuple, buffer
bool IsIntegralType(PrimitiveType type);  // signed or unsigned integers (not pred)
bool IsSignedIntegralType(PrimitiveType type);
bool IsUnsignedIntegralType(PrimitiveType type);
bool IsFloatingPointType(PrimitiveType type);
bool IsComplexType(PrimitiveType type);

}  // namespace hilo

#endif  // HILO_IR_PRIMITIVE_TYPE_H_
