// PrefetchLine: a hint that the cache line at an address will be read soon.
//
// Why not __builtin_prefetch alone: GCC 12 judges a function whose only
// effect is a prefetch to have no effect at all (its IPA pure/const
// analysis), and then deletes the calls to it. A small inline helper such
// as `if (capacity_ != 0) __builtin_prefetch(...)` compiled to nothing that
// way, so the prefetches of the module's name index never ran
// (docs/performance.md, "twenty-fourth session"). The empty volatile asm
// gives the helper an effect the compiler must keep; it emits no code.
// A prefetch never faults: any address, even an invalid one, is allowed.
#ifndef HILO_IR_PREFETCH_H_
#define HILO_IR_PREFETCH_H_

namespace hilo {

inline void PrefetchLine(const void* address) {
  __builtin_prefetch(address);
  asm volatile("" : : "r"(address));
}

}  // namespace hilo

#endif  // HILO_IR_PREFETCH_H_
