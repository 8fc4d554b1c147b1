// When protobuf registers the descriptors of hlo.proto and descriptor.proto.
//
// The static tools are linked without the generated code's start-up
// registration (cmake/lazy-proto-registration.ld): protobuf then registers a
// file on its first use, which a text round trip never makes (it saved the
// one-instruction module ~400 KB of its peak; docs/performance.md,
// "thirteenth session: start-up and corpus memory"). HILO_LAZY_PROTO=0 does
// the registration the static initializers did, when the tool starts, so
// that the gain can be measured.
#ifndef HILO_TOOLS_COMMON_PROTO_REGISTRATION_H_
#define HILO_TOOLS_COMMON_PROTO_REGISTRATION_H_

namespace hilo::tool {

// Registers descriptor.proto's and hlo.proto's descriptors now when
// HILO_LAZY_PROTO is 0 (as their AddDescriptorsRunners would have before
// main); otherwise nothing. Registering twice is harmless (protobuf does it
// once per file), so this is also right in a build that registers at
// start-up (dynamically linked tools, tests).
void RegisterProtoDescriptorsUnlessLazy();

}  // namespace hilo::tool

#endif  // HILO_TOOLS_COMMON_PROTO_REGISTRATION_H_
