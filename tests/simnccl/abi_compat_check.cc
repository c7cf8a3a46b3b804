// Compile-time check that ccltune's declaration of the tuner-plugin ABI (src/tuner_abi.h: ccltune* names,
// int for the collective and the log level) and the simulated NCCL's (tuner_abi.h here: NCCL's names and
// enums) are one C ABI: the same struct layouts, and every entry point takes and returns values passed
// alike (same size, alignment and kind). simnccl.cc relies on it where it calls a plugin with clang's
// function-type check off (CallPlugin). Nothing runs: a difference fails the build of simnccl_model_test.
#include <cstddef>
#include <type_traits>

#include "src/tuner_abi.h"
#include "tuner_abi.h"

namespace {

template <typename A, typename B>
constexpr bool PassedAlike() {
  return sizeof(A) == sizeof(B) && alignof(A) == alignof(B) && std::is_pointer_v<A> == std::is_pointer_v<B> &&
         std::is_floating_point_v<A> == std::is_floating_point_v<B>;
}
template <>
constexpr bool PassedAlike<void, void>() {
  return true;
}

template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool SameCall(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2)) {
    return false;
  } else {
    return PassedAlike<R1, R2>() && (PassedAlike<A1, A2>() && ...);
  }
}
template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool SameCall(R1 (*)(A1..., ...), R2 (*)(A2..., ...)) {  // the named parameters of C varargs
  using F = R1 (*)(A1...);
  using G = R2 (*)(A2...);
  return SameCall(F{}, G{});
}

#define SAME_FIELD(A, B, m) \
  static_assert(offsetof(A, m) == offsetof(B, m) && PassedAlike<decltype(A::m), decltype(B::m)>())
#define SAME_ENTRY(A, B, m) \
  SAME_FIELD(A, B, m);      \
  static_assert(SameCall(decltype(A::m){}, decltype(B::m){}))

static_assert(sizeof(ccltuneNvlDomainInfo_v5_t) == sizeof(ncclNvlDomainInfo_v5_t));
SAME_FIELD(ccltuneNvlDomainInfo_v5_t, ncclNvlDomainInfo_v5_t, nNvlDomains);
SAME_FIELD(ccltuneNvlDomainInfo_v5_t, ncclNvlDomainInfo_v5_t, minRanksPerNvlDomain);
SAME_FIELD(ccltuneNvlDomainInfo_v5_t, ncclNvlDomainInfo_v5_t, maxRanksPerNvlDomain);
static_assert(SameCall(ccltuneNcclLogger_t{}, ncclDebugLogger_t{}));

static_assert(sizeof(ccltuneTuner_v6_t) == sizeof(ncclTuner_v6_t));
SAME_FIELD(ccltuneTuner_v6_t, ncclTuner_v6_t, name);
SAME_ENTRY(ccltuneTuner_v6_t, ncclTuner_v6_t, init);
SAME_ENTRY(ccltuneTuner_v6_t, ncclTuner_v6_t, getCollInfo);
SAME_ENTRY(ccltuneTuner_v6_t, ncclTuner_v6_t, finalize);
SAME_ENTRY(ccltuneTuner_v6_t, ncclTuner_v6_t, getChunkSize);

static_assert(sizeof(ccltuneTuner_v5_t) == sizeof(ncclTuner_v5_t));
SAME_FIELD(ccltuneTuner_v5_t, ncclTuner_v5_t, name);
SAME_ENTRY(ccltuneTuner_v5_t, ncclTuner_v5_t, init);
SAME_ENTRY(ccltuneTuner_v5_t, ncclTuner_v5_t, getCollInfo);
SAME_ENTRY(ccltuneTuner_v5_t, ncclTuner_v5_t, finalize);

static_assert(sizeof(ccltuneTuner_v4_t) == sizeof(ncclTuner_v4_t));
SAME_FIELD(ccltuneTuner_v4_t, ncclTuner_v4_t, name);
SAME_ENTRY(ccltuneTuner_v4_t, ncclTuner_v4_t, init);
SAME_ENTRY(ccltuneTuner_v4_t, ncclTuner_v4_t, getCollInfo);
SAME_ENTRY(ccltuneTuner_v4_t, ncclTuner_v4_t, destroy);

}  // namespace
