// executor, CUDA backend: the CUDA driver API opened at run time with dlopen("libcuda.so.1"), so
// nothing links against a CUDA version and the library loads on machines without a GPU. Function
// types come from cuda.h; the exported names are the versioned ones cuda.h maps to (cuMemAlloc ->
// cuMemAlloc_v2, ...), taken from its own macros so they cannot drift from the declarations.
#include <cuda.h>
#include <dlfcn.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "executor/internal/backends.hpp"

namespace ccltune::executor::internal {
namespace {

#define CCLTUNE_CU_STR2(x) #x
#define CCLTUNE_CU_STR(x) CCLTUNE_CU_STR2(x)

// Driver entry points; each field has the exact type cuda.h declares.
struct DriverApi {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemAllocHost) MemAllocHost = nullptr;
  decltype(&::cuMemFreeHost) MemFreeHost = nullptr;
  decltype(&::cuMemcpyHtoDAsync) MemcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&::cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuStreamIsCapturing) StreamIsCapturing = nullptr;
  decltype(&::cuStreamQuery) StreamQuery = nullptr;
  decltype(&::cuThreadExchangeStreamCaptureMode) ThreadExchangeStreamCaptureMode = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventQuery) EventQuery = nullptr;
  decltype(&::cuStreamWaitEvent) StreamWaitEvent = nullptr;
  decltype(&::cuEventElapsedTime) EventElapsedTime = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuMemGetInfo) MemGetInfo = nullptr;
};

template <typename Fn>
absl::Status Resolve(void* lib, const char* versioned, const char* fallback, Fn* out) {
  void* sym = dlsym(lib, versioned);
  if (sym == nullptr && fallback != nullptr) sym = dlsym(lib, fallback);
  if (sym == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("libcuda.so.1 lacks ", versioned, ": the NVIDIA driver is too old for ccltune (need CUDA 12+)"));
  }
  *out = reinterpret_cast<Fn>(sym);
  return absl::OkStatus();
}

absl::StatusOr<DriverApi> LoadDriver() {
  // Never dlclose'd: the driver must outlive every context and event created through it.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return absl::NotFoundError(
        absl::StrCat("CUDA backend unavailable: cannot load libcuda.so.1 (no NVIDIA driver "
                     "on this machine?): ",
                     err ? err : "unknown dlopen error"));
  }
  DriverApi api;
  absl::Status st;
#define CCLTUNE_CU_RESOLVE(field, fn)                         \
  st = Resolve(lib, CCLTUNE_CU_STR(fn), nullptr, &api.field); \
  if (!st.ok()) return st;
  CCLTUNE_CU_RESOLVE(Init, cuInit)
  CCLTUNE_CU_RESOLVE(GetErrorName, cuGetErrorName)
  CCLTUNE_CU_RESOLVE(GetErrorString, cuGetErrorString)
  CCLTUNE_CU_RESOLVE(DeviceGetCount, cuDeviceGetCount)
  CCLTUNE_CU_RESOLVE(DeviceGet, cuDeviceGet)
  CCLTUNE_CU_RESOLVE(DeviceGetName, cuDeviceGetName)
  CCLTUNE_CU_RESOLVE(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)
  CCLTUNE_CU_RESOLVE(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease)
  CCLTUNE_CU_RESOLVE(CtxSetCurrent, cuCtxSetCurrent)
  CCLTUNE_CU_RESOLVE(MemAlloc, cuMemAlloc)
  CCLTUNE_CU_RESOLVE(MemFree, cuMemFree)
  CCLTUNE_CU_RESOLVE(MemAllocHost, cuMemAllocHost)
  CCLTUNE_CU_RESOLVE(MemFreeHost, cuMemFreeHost)
  CCLTUNE_CU_RESOLVE(MemcpyHtoDAsync, cuMemcpyHtoDAsync)
  CCLTUNE_CU_RESOLVE(MemcpyDtoHAsync, cuMemcpyDtoHAsync)
  CCLTUNE_CU_RESOLVE(MemsetD8Async, cuMemsetD8Async)
  CCLTUNE_CU_RESOLVE(StreamCreate, cuStreamCreate)
  CCLTUNE_CU_RESOLVE(StreamDestroy, cuStreamDestroy)
  CCLTUNE_CU_RESOLVE(StreamSynchronize, cuStreamSynchronize)
  CCLTUNE_CU_RESOLVE(StreamIsCapturing, cuStreamIsCapturing)
  CCLTUNE_CU_RESOLVE(StreamQuery, cuStreamQuery)
  CCLTUNE_CU_RESOLVE(ThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode)
  CCLTUNE_CU_RESOLVE(EventCreate, cuEventCreate)
  CCLTUNE_CU_RESOLVE(EventDestroy, cuEventDestroy)
  CCLTUNE_CU_RESOLVE(EventRecord, cuEventRecord)
  CCLTUNE_CU_RESOLVE(EventQuery, cuEventQuery)
  CCLTUNE_CU_RESOLVE(StreamWaitEvent, cuStreamWaitEvent)
  CCLTUNE_CU_RESOLVE(ModuleLoadData, cuModuleLoadData)
  CCLTUNE_CU_RESOLVE(ModuleUnload, cuModuleUnload)
  CCLTUNE_CU_RESOLVE(ModuleGetFunction, cuModuleGetFunction)
  CCLTUNE_CU_RESOLVE(LaunchKernel, cuLaunchKernel)
  CCLTUNE_CU_RESOLVE(MemGetInfo, cuMemGetInfo)
#undef CCLTUNE_CU_RESOLVE
  // cuEventElapsedTime_v2 exists from CUDA 12.8 on; older drivers only have the (same-signature) v1.
  st = Resolve(lib, CCLTUNE_CU_STR(cuEventElapsedTime), "cuEventElapsedTime", &api.EventElapsedTime);
  if (!st.ok()) return st;
  return api;
}

#undef CCLTUNE_CU_STR
#undef CCLTUNE_CU_STR2

absl::StatusCode CodeFor(CUresult r) {
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_DEVICE:
      return absl::StatusCode::kInvalidArgument;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_NOT_READY:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(DriverApi api) : api_(api) {}
  ~CudaDevice() override {
    // Balances SetDevice's retains; errors (driver already torn down at exit) are of no use here.
    for (auto& [dev, ctx] : retained_) api_.DevicePrimaryCtxRelease(dev);
  }

  // Initializes the driver and checks there is at least one device.
  absl::Status Init() {
    if (CUresult r = api_.Init(0); r != CUDA_SUCCESS) return Error(r, "cuInit");
    int count = 0;
    if (CUresult r = api_.DeviceGetCount(&count); r != CUDA_SUCCESS) return Error(r, "cuDeviceGetCount");
    if (count <= 0) return absl::FailedPreconditionError("CUDA backend unavailable: the driver reports no GPU");
    return UpdateName(0);
  }

  Backend backend() const override { return Backend::kCuda; }
  const char* name() const override { return name_.c_str(); }

  absl::Status SetDevice(int ordinal) override {
    CUdevice dev = 0;
    if (CUresult r = api_.DeviceGet(&dev, ordinal); r != CUDA_SUCCESS) {
      return Error(r, absl::StrCat("cuDeviceGet(", ordinal, ")"));
    }
    auto it = retained_.find(dev);
    if (it == retained_.end()) {
      CUcontext ctx = nullptr;
      if (CUresult r = api_.DevicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS) {
        return Error(r, absl::StrCat("cuDevicePrimaryCtxRetain(device ", ordinal, ")"));
      }
      it = retained_.emplace(dev, ctx).first;
    }
    if (CUresult r = api_.CtxSetCurrent(it->second); r != CUDA_SUCCESS) return Error(r, "cuCtxSetCurrent");
    return UpdateName(ordinal);
  }

  absl::StatusOr<int> DeviceCount() override {
    int count = 0;
    if (CUresult r = api_.DeviceGetCount(&count); r != CUDA_SUCCESS) return Error(r, "cuDeviceGetCount");
    return count;
  }

  absl::StatusOr<void*> Alloc(size_t bytes) override {
    CUdeviceptr p = 0;
    if (CUresult r = api_.MemAlloc(&p, bytes == 0 ? 1 : bytes); r != CUDA_SUCCESS) {
      return Error(r, absl::StrCat("cuMemAlloc(", bytes, " bytes)"));
    }
    return reinterpret_cast<void*>(p);
  }
  void Free(void* ptr) override {
    if (ptr != nullptr) api_.MemFree(reinterpret_cast<CUdeviceptr>(ptr));
  }
  absl::StatusOr<void*> AllocHost(size_t bytes) override {
    void* p = nullptr;
    if (CUresult r = api_.MemAllocHost(&p, bytes == 0 ? 1 : bytes); r != CUDA_SUCCESS) {
      return Error(r, absl::StrCat("cuMemAllocHost(", bytes, " bytes)"));
    }
    return p;
  }
  void FreeHost(void* ptr) override {
    if (ptr != nullptr) api_.MemFreeHost(ptr);
  }

  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes, Stream s) override {
    return Check(api_.MemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, AsCu(s)), "cuMemcpyHtoDAsync");
  }
  absl::Status CopyToHostAsync(void* dst, const void* src, size_t bytes, Stream s) override {
    return Check(api_.MemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, AsCu(s)), "cuMemcpyDtoHAsync");
  }
  absl::Status MemsetAsync(void* dst, uint8_t value, size_t bytes, Stream s) override {
    return Check(api_.MemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), value, bytes, AsCu(s)), "cuMemsetD8Async");
  }

  absl::StatusOr<Stream> CreateStream() override {
    CUstream s = nullptr;
    // Non-blocking: no implicit synchronization with the legacy default stream (as nccl-tests does).
    if (CUresult r = api_.StreamCreate(&s, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      return Error(r, "cuStreamCreate");
    }
    return static_cast<Stream>(s);
  }
  void DestroyStream(Stream s) override {
    if (s != nullptr) api_.StreamDestroy(AsCu(s));
  }
  absl::Status StreamSynchronize(Stream s) override {
    return Check(api_.StreamSynchronize(AsCu(s)), "cuStreamSynchronize");
  }

  absl::StatusOr<Event> CreateEvent() override {
    CUevent e = nullptr;
    if (CUresult r = api_.EventCreate(&e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) return Error(r, "cuEventCreate");
    return static_cast<Event>(e);
  }
  void DestroyEvent(Event e) override {
    if (e != nullptr) api_.EventDestroy(static_cast<CUevent>(e));
  }
  absl::Status RecordEvent(Event e, Stream s) override {
    return Check(api_.EventRecord(static_cast<CUevent>(e), AsCu(s)), "cuEventRecord");
  }

  absl::StatusOr<EventState> QueryEvent(Event e) override {
    // A query in the default (global) capture mode while another stream of the process captures
    // would invalidate that capture: relax this thread's mode around the query, then restore it.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (CUresult r = api_.ThreadExchangeStreamCaptureMode(&mode); r != CUDA_SUCCESS) {
      return Error(r, "cuThreadExchangeStreamCaptureMode");
    }
    CUresult q = api_.EventQuery(static_cast<CUevent>(e));
    api_.ThreadExchangeStreamCaptureMode(&mode);  // restores the caller's mode
    if (q == CUDA_SUCCESS) return EventState::kDone;
    if (q == CUDA_ERROR_NOT_READY) return EventState::kPending;
    return Error(q, "cuEventQuery");
  }

  absl::Status StreamWaitEvent(Stream s, Event e) override {
    return Check(api_.StreamWaitEvent(AsCu(s), static_cast<CUevent>(e), 0), "cuStreamWaitEvent");
  }

  absl::StatusOr<double> ElapsedUs(Event a, Event b) override {
    float ms = 0;
    if (CUresult r = api_.EventElapsedTime(&ms, static_cast<CUevent>(a), static_cast<CUevent>(b)); r != CUDA_SUCCESS) {
      return Error(r, "cuEventElapsedTime");
    }
    return static_cast<double>(ms) * 1000.0;
  }

  bool IsCapturing(Stream s) override {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    // An error here (e.g. the legacy stream queried while another stream captures globally) is
    // treated as capturing: the caller then stays away from the stream, which is always safe.
    if (api_.StreamIsCapturing(AsCu(s), &status) != CUDA_SUCCESS) return true;
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  bool StreamIdle(Stream s) override {
    // Relaxed capture mode around the query, as in QueryEvent: another stream may capture.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (api_.ThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) return false;
    const CUresult q = api_.StreamQuery(AsCu(s));
    api_.ThreadExchangeStreamCaptureMode(&mode);
    return q == CUDA_SUCCESS;  // CUDA_ERROR_NOT_READY: work still queued; any error: not known, not idle
  }

  absl::StatusOr<Module> LoadModule(const void* image) override {
    if (image == nullptr) return absl::InvalidArgumentError("LoadModule: null image");
    CUmodule m = nullptr;
    // JIT of the embedded PTX happens here when the image has no SASS for this GPU.
    if (CUresult r = api_.ModuleLoadData(&m, image); r != CUDA_SUCCESS) return Error(r, "cuModuleLoadData");
    return static_cast<Module>(m);
  }
  void UnloadModule(Module m) override {
    if (m != nullptr) api_.ModuleUnload(static_cast<CUmodule>(m));
  }
  absl::StatusOr<Kernel> GetKernel(Module m, const char* name) override {
    CUfunction f = nullptr;
    if (CUresult r = api_.ModuleGetFunction(&f, static_cast<CUmodule>(m), name); r != CUDA_SUCCESS) {
      return Error(r, absl::StrCat("cuModuleGetFunction(", name, ")"));
    }
    return static_cast<Kernel>(f);
  }
  absl::Status Launch(Kernel k, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes, Stream s,
                      void** args) override {
    return Check(api_.LaunchKernel(static_cast<CUfunction>(k), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                   shared_bytes, AsCu(s), args, nullptr),
                 "cuLaunchKernel");
  }
  absl::StatusOr<MemoryInfo> GetMemoryInfo() override {
    MemoryInfo info;
    if (CUresult r = api_.MemGetInfo(&info.free_bytes, &info.total_bytes); r != CUDA_SUCCESS) {
      return Error(r, "cuMemGetInfo");
    }
    return info;
  }

 private:
  static CUstream AsCu(Stream s) { return static_cast<CUstream>(s); }

  absl::Status Error(CUresult r, absl::string_view what) const {
    const char* err_name = nullptr;
    const char* err_text = nullptr;
    if (api_.GetErrorName(r, &err_name) != CUDA_SUCCESS || err_name == nullptr) err_name = "CUDA_ERROR_UNKNOWN";
    if (api_.GetErrorString(r, &err_text) != CUDA_SUCCESS || err_text == nullptr) err_text = "unrecognized error";
    return absl::Status(CodeFor(r),
                        absl::StrCat(what, " failed: ", err_name, " (", static_cast<int>(r), "): ", err_text));
  }
  absl::Status Check(CUresult r, absl::string_view what) const {
    return r == CUDA_SUCCESS ? absl::OkStatus() : Error(r, what);
  }
  absl::Status UpdateName(int ordinal) {
    CUdevice dev = 0;
    char buf[256] = {};
    if (CUresult r = api_.DeviceGet(&dev, ordinal); r != CUDA_SUCCESS) return Error(r, "cuDeviceGet");
    if (CUresult r = api_.DeviceGetName(buf, sizeof(buf) - 1, dev); r != CUDA_SUCCESS)
      return Error(r, "cuDeviceGetName");
    name_ = buf;
    return absl::OkStatus();
  }

  DriverApi api_;
  std::map<CUdevice, CUcontext> retained_;
  std::string name_ = "CUDA";
};

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> MakeCudaDevice() {
  absl::StatusOr<DriverApi> api = LoadDriver();
  if (!api.ok()) return api.status();
  auto device = std::make_unique<CudaDevice>(*api);
  if (absl::Status st = device->Init(); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("CUDA backend unavailable: ", st.message()));
  }
  return std::unique_ptr<Device>(std::move(device));
}

}  // namespace ccltune::executor::internal
