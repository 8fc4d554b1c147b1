#include "common/proto_registration.h"

#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/generated_message_reflection.h"
#include "hilo/ir/env_switch.h"
#include "hilo/proto/hlo.pb.h"

namespace hilo::tool {

void RegisterProtoDescriptorsUnlessLazy() {
  if (!EnvSwitchIsZero("HILO_LAZY_PROTO")) return;
  // The same call the generated .pb.cc files' static initializers make.
  google::protobuf::internal::AddDescriptorsRunner descriptor_proto(
      &descriptor_table_google_2fprotobuf_2fdescriptor_2eproto);
  google::protobuf::internal::AddDescriptorsRunner hlo_proto(
      &descriptor_table_hilo_2fproto_2fhlo_2eproto);
}

}  // namespace hilo::tool
