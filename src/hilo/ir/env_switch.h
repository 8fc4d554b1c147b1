// The environment switches of hilo's speed- and memory-only mechanisms.
//
// Every mechanism that exists only for speed or memory can be turned off
// (or its older way turned back on) by an environment variable, so that its
// gain can be measured; docs/performance.md lists each with its gain. These
// two functions are how the library and the tools read them, so that "on"
// and "off" mean the same everywhere.
#ifndef HILO_IR_ENV_SWITCH_H_
#define HILO_IR_ENV_SWITCH_H_

namespace hilo {

// True when environment variable `name` is exactly "1": a fallback or check
// that is off by default (HILO_VERIFY_FULL=1, HILO_PROTO_GENERATED=1).
bool EnvSwitchIsOne(const char* name);

// True when environment variable `name` is exactly "0": a mechanism that is
// on by default is switched off (HILO_DROP_INPUT=0, HILO_PROTO_STREAM=0).
bool EnvSwitchIsZero(const char* name);

}  // namespace hilo

#endif  // HILO_IR_ENV_SWITCH_H_
