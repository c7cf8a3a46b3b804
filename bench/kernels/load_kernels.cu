// ccltune-bench: GPU kernels of the interference load and of the overhead mode's GPU hold. Built
// with nvcc into a fatbin (SASS for sm_90 and PTX for compute_90, which the driver JIT-compiles for
// newer GPUs), embedded in ccltune-bench and loaded with cuModuleLoadData. Every kernel is finite
// and depends on nothing but its arguments: NCCL's kernels need SMs too, so no kernel here may wait
// for the host or for another kernel.

// C = A * B for n x n row-major float matrices, n a multiple of 64: 64 x 64 output tile per block of
// 256 threads, 4 x 4 outputs per thread in registers, A and B staged through shared memory 16 deep
// along k. A plain FMA kernel (no tensor cores): compute-bound like a training step's math.
extern "C" __global__ void __launch_bounds__(256)
    ccltune_load_gemm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
  constexpr int kTile = 64;
  constexpr int kDepth = 16;
  __shared__ float as[kDepth][kTile];  // transposed: as[k][row]
  __shared__ float bs[kDepth][kTile];
  const int tx = threadIdx.x % 16;  // output columns tx, tx+16, tx+32, tx+48
  const int ty = threadIdx.x / 16;  // output rows ty, ty+16, ty+32, ty+48
  const int row0 = blockIdx.y * kTile;
  const int col0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += kDepth) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int idx = threadIdx.x + i * 256;
      const int ar = idx / kDepth, ak = idx % kDepth;  // A tile: 64 rows x 16 columns
      as[ak][ar] = a[static_cast<size_t>(row0 + ar) * n + k0 + ak];
      const int bk = idx / kTile, bc = idx % kTile;  // B tile: 16 rows x 64 columns
      bs[bk][bc] = b[static_cast<size_t>(k0 + bk) * n + col0 + bc];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kDepth; ++k) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        av[i] = as[k][ty + 16 * i];
        bv[i] = bs[k][tx + 16 * i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) c[static_cast<size_t>(row0 + ty + 16 * i) * n + col0 + tx + 16 * j] = acc[i][j];
}

// x = y + s * z over n4 float4 elements (STREAM triad): memory-bound, 3 x 16 bytes per element.
extern "C" __global__ void ccltune_load_triad(float4* __restrict__ x, const float4* __restrict__ y,
                                              const float4* __restrict__ z, float s, unsigned long long n4) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n4;
       i += stride) {
    const float4 p = y[i];
    const float4 q = z[i];
    x[i] = make_float4(p.x + s * q.x, p.y + s * q.y, p.z + s * q.z, p.w + s * q.w);
  }
}

// Keeps one thread busy for `ns` nanoseconds of the GPU's global timer, then returns: enqueued ahead
// of collectives on their stream, it holds them back so the host never waits on a full queue while
// its enqueue time is measured. One block: it leaves every other SM free.
extern "C" __global__ void ccltune_hold(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
