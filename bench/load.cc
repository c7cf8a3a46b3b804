// ccltune-bench: the bench's own GPU work (see load.hpp).
#include "bench/load.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <utility>

#ifdef CCLTUNE_BENCH_HAVE_KERNELS
extern const unsigned char ccltune_load_kernels_image[];
extern const size_t ccltune_load_kernels_image_size;
#endif

namespace ccltune::bench {

bool KernelsBuiltIn() {
#ifdef CCLTUNE_BENCH_HAVE_KERNELS
  return ccltune_load_kernels_image_size > 0;
#else
  return false;
#endif
}

std::string KernelsArch() {
#ifdef CCLTUNE_BENCH_HAVE_KERNELS
  return CCLTUNE_BENCH_KERNELS_ARCH;
#else
  return "";
#endif
}

std::string LoadOptions::Kinds() const {
  std::string s;
  if (gemm) s += "gemm";
  if (mem) s += s.empty() ? "mem" : ",mem";
  return s;
}

LoadStats LoadStats::Minus(const LoadStats& o) const {
  LoadStats d;
  d.gemm_kernels = gemm_kernels - o.gemm_kernels;
  d.mem_kernels = mem_kernels - o.mem_kernels;
  d.gemm_us = gemm_us - o.gemm_us;
  d.mem_us = mem_us - o.mem_us;
  d.wall_us = wall_us - o.wall_us;
  d.gemm_flops = gemm_flops - o.gemm_flops;
  d.mem_bytes = mem_bytes - o.mem_bytes;
  return d;
}

// ---------------------------------------------------------------------------------------------
// GpuKernels

absl::StatusOr<std::unique_ptr<GpuKernels>> GpuKernels::Load(executor::Device* device) {
#ifdef CCLTUNE_BENCH_HAVE_KERNELS
  std::unique_ptr<GpuKernels> k(new GpuKernels);
  absl::StatusOr<executor::Module> m = device->LoadModule(ccltune_load_kernels_image);
  if (!m.ok()) return m.status();
  k->device_ = device;
  k->module_ = *m;
  const std::pair<executor::Kernel*, const char*> wanted[] = {
      {&k->gemm, "ccltune_load_gemm"}, {&k->triad, "ccltune_load_triad"}, {&k->hold, "ccltune_hold"}};
  for (const auto& [field, name] : wanted) {
    absl::StatusOr<executor::Kernel> f = device->GetKernel(k->module_, name);
    if (!f.ok()) return f.status();  // ~GpuKernels unloads the module
    *field = *f;
  }
  return k;
#else
  return absl::FailedPreconditionError(
      "this ccltune-bench was built without its GPU kernels (no nvcc at build time: configure with "
      "-DCCLTUNE_BENCH_KERNELS=ON and CCLTUNE_NVCC pointing at nvcc)");
#endif
}

GpuKernels::~GpuKernels() {
  if (device_ != nullptr && module_ != nullptr) device_->UnloadModule(module_);
}

absl::Status GpuKernels::Hold(executor::Device* device, executor::Stream s, uint64_t ns) const {
  unsigned long long arg = ns;
  void* args[] = {&arg};
  const unsigned one[3] = {1, 1, 1};
  return device->Launch(hold, one, one, 0, s, args);
}

// ---------------------------------------------------------------------------------------------
// The load's buffers and kernel launches, shared by both modes

namespace {

// The GEMM's three n x n matrices and the triad's three arrays of the kinds asked for. Inputs hold
// 0x3c3c3c3c (about 0.0115f): finite values that neither overflow nor go subnormal.
absl::Status AllocLoadBuffers(executor::Device* device, const LoadOptions& opt, executor::Stream s, void* mat[3],
                              void* vec[3]) {
  if (opt.gemm) {
    const size_t bytes = static_cast<size_t>(opt.gemm_n) * opt.gemm_n * sizeof(float);
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<void*> a = device->Alloc(bytes);
      if (!a.ok()) return a.status();
      mat[i] = *a;
      if (absl::Status st = device->MemsetAsync(mat[i], 0x3c, bytes, s); !st.ok()) return st;
    }
  }
  if (opt.mem) {
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<void*> a = device->Alloc(opt.mem_bytes);
      if (!a.ok()) return a.status();
      vec[i] = *a;
      if (absl::Status st = device->MemsetAsync(vec[i], 0x3c, opt.mem_bytes, s); !st.ok()) return st;
    }
  }
  return device->StreamSynchronize(s);
}

void FreeLoadBuffers(executor::Device* device, void* mat[3], void* vec[3]) {
  for (int i = 0; i < 3; ++i) {
    device->Free(mat[i]);
    device->Free(vec[i]);
    mat[i] = vec[i] = nullptr;
  }
}

// GEMM and triad alternate when both kinds run.
bool IsGemm(const LoadOptions& opt, uint64_t index) { return opt.gemm && (!opt.mem || index % 2 == 0); }

// Enqueues the `index`-th kernel of the load on `s` and counts it in `stats`.
absl::Status LaunchLoadKernel(executor::Device* device, const GpuKernels* kernels, const LoadOptions& opt,
                              uint64_t index, void* mat[3], void* vec[3], executor::Stream s, LoadStats* stats) {
  const bool gemm = IsGemm(opt, index);
  if (gemm) {
    int n = opt.gemm_n;
    void* args[] = {&mat[0], &mat[1], &mat[2], &n};
    const unsigned grid[3] = {static_cast<unsigned>(n / 64), static_cast<unsigned>(n / 64), 1};
    const unsigned block[3] = {256, 1, 1};
    ++stats->gemm_kernels;
    stats->gemm_flops += 2.0 * n * static_cast<double>(n) * n;
    return device->Launch(kernels->gemm, grid, block, 0, s, args);
  }
  float scale = 0.5f;
  unsigned long long n4 = opt.mem_bytes / 16;
  void* args[] = {&vec[0], &vec[1], &vec[2], &scale, &n4};
  // Four float4 per thread: short blocks, so collectives' blocks find free SMs between them.
  const unsigned long long blocks = (n4 + 1023) / 1024;
  const unsigned grid[3] = {static_cast<unsigned>(blocks < (1ull << 31) - 1 ? blocks : (1ull << 31) - 1), 1, 1};
  const unsigned block[3] = {256, 1, 1};
  ++stats->mem_kernels;
  stats->mem_bytes += 3.0 * static_cast<double>(opt.mem_bytes / 16 * 16);
  return device->Launch(kernels->triad, grid, block, 0, s, args);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BackgroundLoad

struct BackgroundLoad::Impl {
  LoadOptions opt;
  int ordinal = 0;
  const GpuKernels* kernels = nullptr;

  // Owned and used by the pump thread only (its own Device: nothing is shared with the main thread
  // but the device's primary context).
  std::unique_ptr<executor::Device> device;
  executor::Stream stream = nullptr;
  void* mat[3] = {};  // gemm: A, B, C
  void* vec[3] = {};  // triad: x, y, z
  uint64_t launched = 0;

  std::thread thread;
  std::atomic<bool> run{false};
  std::mutex mu;
  std::condition_variable cv;
  bool running = false;  // guarded by mu: Resume()d and not Pause()d
  bool drained = true;   // guarded by mu: no background kernel queued
  uint64_t resumes = 0;  // guarded by mu: Resume() calls that started a phase
  uint64_t served = 0;   // pump only: the phase it ran last
  bool quit = false;
  bool init_done = false;
  absl::Status error;  // first failure; the load stops for good
  LoadStats stats;     // guarded by mu: merged after each drain

  absl::Status Init() {
    absl::StatusOr<std::unique_ptr<executor::Device>> d = executor::OpenCudaDevice();
    if (!d.ok()) return d.status();
    device = *std::move(d);
    if (absl::Status st = device->SetDevice(ordinal); !st.ok()) return st;
    absl::StatusOr<executor::Stream> s = device->CreateStream();
    if (!s.ok()) return s.status();
    stream = *s;
    return AllocLoadBuffers(device.get(), opt, stream, mat, vec);
  }

  void Release() {
    if (!device) return;
    if (stream != nullptr) {
      // Nothing may still use the buffers when they are freed; an error changes nothing here.
      device->StreamSynchronize(stream).IgnoreError();
      device->DestroyStream(stream);
    }
    FreeLoadBuffers(device.get(), mat, vec);
    device.reset();
  }

  // Enqueues the next background kernel between a pair of timing events (tag 0 gemm, 1 triad).
  absl::Status LaunchNext(executor::Timer* timer) {
    if (!timer->Begin(stream, IsGemm(opt, launched) ? 0 : 1)) {
      return absl::InternalError("background load: cannot record an event");
    }
    LoadStats counted;  // the pump accounts from the timed samples (Account), not from launches
    absl::Status st = LaunchLoadKernel(device.get(), kernels, opt, launched++, mat, vec, stream, &counted);
    timer->End(stream);  // closes the region even when the launch failed (its sample is then ignored)
    return st;
  }

  void Account(const std::vector<executor::Sample>& samples, LoadStats* s) const {
    const double n = opt.gemm_n;
    for (const executor::Sample& x : samples) {
      if (x.tag == 0) {
        ++s->gemm_kernels;
        s->gemm_us += x.us;
        s->gemm_flops += 2.0 * n * n * n;
      } else {
        ++s->mem_kernels;
        s->mem_us += x.us;
        s->mem_bytes += 3.0 * static_cast<double>(opt.mem_bytes / 16 * 16);
      }
    }
  }

  void Pump() {
    absl::Status st = Init();
    {
      std::lock_guard<std::mutex> lock(mu);
      error = st;
      init_done = true;
    }
    cv.notify_all();
    if (!st.ok()) {
      Release();
      return;
    }
    RunPhases();
    Release();  // after RunPhases(): its timer's events belong to `device`
  }

  void RunPhases() {
    executor::Timer timer(device.get(), opt.depth);
    std::vector<executor::Sample> samples;
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      // A phase per Resume(): counting them (rather than waiting for `running` to drop after a
      // drain) cannot miss a Pause() and Resume() that both happen before this thread wakes up.
      cv.wait(lock, [&] { return quit || (resumes != served && error.ok()); });
      if (quit) break;
      served = resumes;
      lock.unlock();
      const auto t0 = std::chrono::steady_clock::now();
      bool launch_failed = false;
      absl::Status failure;
      while (run.load(std::memory_order_acquire)) {
        timer.Harvest(&samples);
        if (timer.pending() < opt.depth) {
          failure = LaunchNext(&timer);
          if (!failure.ok()) {
            launch_failed = true;
            break;
          }
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      }
      // Drain: wait for every queued kernel, then collect their times.
      absl::Status sync = device->StreamSynchronize(stream);
      timer.Harvest(&samples);
      const double wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      LoadStats got;
      Account(samples, &got);
      samples.clear();
      lock.lock();
      stats.gemm_kernels += got.gemm_kernels;
      stats.mem_kernels += got.mem_kernels;
      stats.gemm_us += got.gemm_us;
      stats.mem_us += got.mem_us;
      stats.gemm_flops += got.gemm_flops;
      stats.mem_bytes += got.mem_bytes;
      stats.wall_us += wall_us;
      if (error.ok() && launch_failed) error = failure;
      if (error.ok() && !sync.ok()) error = sync;
      drained = true;
      cv.notify_all();
      // After a failure no phase starts again (Resume() refuses); Pause() reports the error.
    }
  }
};

BackgroundLoad::BackgroundLoad(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<BackgroundLoad>> BackgroundLoad::Create(const LoadOptions& opt, int ordinal,
                                                                       const GpuKernels* kernels) {
  if (!opt.on()) return absl::InvalidArgumentError("background load: no kind given (gemm, mem)");
  if (kernels == nullptr) return absl::InvalidArgumentError("background load: kernels not loaded");
  if (opt.gemm_n < 64 || opt.gemm_n % 64 != 0) return absl::InvalidArgumentError("gemm size must be a multiple of 64");
  if (opt.mem && opt.mem_bytes < 16) return absl::InvalidArgumentError("mem size must be at least 16 bytes");
  if (opt.depth < 1) return absl::InvalidArgumentError("queue depth must be at least 1");
  auto impl = std::make_unique<Impl>();
  impl->opt = opt;
  impl->ordinal = ordinal;
  impl->kernels = kernels;
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] { raw->Pump(); });
  std::unique_ptr<BackgroundLoad> load(new BackgroundLoad(std::move(impl)));
  std::unique_lock<std::mutex> lock(raw->mu);
  raw->cv.wait(lock, [raw] { return raw->init_done; });
  if (!raw->error.ok()) {
    absl::Status st = raw->error;
    lock.unlock();
    return absl::Status(st.code(), "background load: " + std::string(st.message()));
  }
  return load;
}

BackgroundLoad::~BackgroundLoad() {
  Pause().IgnoreError();  // drains: the buffers are freed only once no kernel uses them
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->quit = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void BackgroundLoad::Resume() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->running || !impl_->error.ok()) return;
  impl_->running = true;
  impl_->drained = false;
  ++impl_->resumes;
  impl_->run.store(true, std::memory_order_release);
  impl_->cv.notify_all();
}

absl::Status BackgroundLoad::Pause() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (impl_->running) {
    impl_->run.store(false, std::memory_order_release);
    impl_->cv.wait(lock, [&] { return impl_->drained; });
    impl_->running = false;
    impl_->cv.notify_all();
  }
  if (!impl_->error.ok())
    return absl::Status(impl_->error.code(), "background load: " + std::string(impl_->error.message()));
  return absl::OkStatus();
}

LoadStats BackgroundLoad::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

absl::StatusOr<LoadStats> CalibrateLoad(BackgroundLoad* load, int ms) {
  const LoadStats before = load->stats();
  load->Resume();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (absl::Status st = load->Pause(); !st.ok()) return st;
  return load->stats().Minus(before);
}

// ---------------------------------------------------------------------------------------------
// StepLoad

absl::StatusOr<std::unique_ptr<StepLoad>> StepLoad::Create(const LoadOptions& opt, executor::Device* device,
                                                           const GpuKernels* kernels) {
  if (!opt.on()) return absl::InvalidArgumentError("step load: no kind given (gemm, mem)");
  if (kernels == nullptr) return absl::InvalidArgumentError("step load: kernels not loaded");
  if (opt.gemm_n < 64 || opt.gemm_n % 64 != 0) return absl::InvalidArgumentError("gemm size must be a multiple of 64");
  if (opt.depth < 1) return absl::InvalidArgumentError("kernels per step must be at least 1");
  std::unique_ptr<StepLoad> l(new StepLoad);
  l->opt_ = opt;
  l->device_ = device;
  l->kernels_ = kernels;
  absl::StatusOr<executor::Stream> s = device->CreateStream();
  if (!s.ok()) return s.status();
  l->stream_ = *s;
  for (executor::Event* e : {&l->start_, &l->comm_done_}) {
    absl::StatusOr<executor::Event> ev = device->CreateEvent();
    if (!ev.ok()) return ev.status();  // ~StepLoad releases what was made
    *e = *ev;
  }
  if (absl::Status st = AllocLoadBuffers(device, opt, l->stream_, l->mat_, l->vec_); !st.ok()) return st;
  // Steps between two drains: a tuning block or a timed sweep of the bench (iterations x communicators).
  l->steps_ = std::make_unique<executor::Timer>(device, std::max(opt.max_steps, 1));
  return l;
}

StepLoad::~StepLoad() {
  if (device_ == nullptr) return;
  if (stream_ != nullptr) device_->StreamSynchronize(stream_).IgnoreError();  // nothing may use the buffers
  steps_.reset();
  FreeLoadBuffers(device_, mat_, vec_);
  for (executor::Event e : {start_, comm_done_})
    if (e != nullptr) device_->DestroyEvent(e);
  if (stream_ != nullptr) device_->DestroyStream(stream_);
}

absl::Status StepLoad::Begin(executor::Stream comm, uint64_t tag) {
  if (!steps_->Begin(stream_, tag)) return absl::ResourceExhaustedError("step load: too many steps before a drain");
  if (absl::Status st = device_->RecordEvent(start_, stream_); !st.ok()) return st;
  for (int i = 0; i < opt_.depth; ++i) {
    absl::Status st = LaunchLoadKernel(device_, kernels_, opt_, kernels_launched_++, mat_, vec_, stream_, &launched_);
    if (!st.ok()) return st;
  }
  return device_->StreamWaitEvent(comm, start_);
}

absl::Status StepLoad::End(executor::Stream comm) {
  if (absl::Status st = device_->RecordEvent(comm_done_, comm); !st.ok()) return st;
  if (absl::Status st = device_->StreamWaitEvent(stream_, comm_done_); !st.ok()) return st;
  steps_->End(stream_);
  return absl::OkStatus();
}

absl::Status StepLoad::Drain(std::vector<executor::Sample>* makespans) {
  absl::Status st = device_->StreamSynchronize(stream_);
  std::vector<executor::Sample> done;
  steps_->Harvest(&done);
  if (makespans != nullptr) makespans->insert(makespans->end(), done.begin(), done.end());
  return st;
}

absl::StatusOr<double> CalibrateStep(StepLoad* load, int steps, executor::Stream comm) {
  if (absl::Status st = load->Drain(); !st.ok()) return st;
  for (int i = 0; i < steps; ++i) {
    if (absl::Status st = load->Begin(comm, static_cast<uint64_t>(i)); !st.ok()) return st;
    if (absl::Status st = load->End(comm); !st.ok()) return st;
  }
  std::vector<executor::Sample> got;
  if (absl::Status st = load->Drain(&got); !st.ok()) return st;
  if (got.empty()) return absl::InternalError("step load: no step could be timed");
  std::vector<double> us;
  for (const executor::Sample& x : got) us.push_back(x.us);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace ccltune::bench
