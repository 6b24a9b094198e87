/* kernels/adam.cu — the CUDA Adam kernel, bitwise equal to kern_adam_ref.
 *
 * Each element runs kern__adam_elem (adam_ref.h) unchanged; the file is built with --fmad=false
 * -prec-div=true -prec-sqrt=true -ftz=false (Makefile) so that definition means the same IEEE
 * operations on the device as on the host. The low-precision copy uses lowp.h, integer only.
 *
 * Layout of the work: when p, m, v, the gradients and the copy are all 16-byte aligned (8-byte
 * for 16-bit arrays) at the same element index `head` (0..3), the elements [head, head + 4 k) go
 * through a grid-stride kernel with 16-byte float4 loads and stores; the at most 6 others (the
 * head and the tail) through a scalar kernel. Otherwise every element takes the scalar kernel,
 * which is grid-stride as well. Both are launched on the caller's stream and checked with
 * cudaGetLastError; every CUDA error is returned with file:line. */
#include <cuda_runtime.h>

#include "kernels/adam_ref.h"
#include "common/rl_api.h"   /* RL_API_TRY */

#define KERN__BLOCK 256   /* threads per block */

/* Returns RL_EENV from the calling function when `call` fails (common/rl_api.h's one check). */
#define KERN__CUDA_CHECK(call) RL_API_TRY(cuda, call, e)

template <int GT>
__device__ __forceinline__ float load_grad(const void *g, int64_t i)
{
    if (GT == KERN_BF16)
        return kern_bf16_to_f32(((const uint16_t *)g)[i]);
    if (GT == KERN_F16)
        return kern_f16_to_f32(((const uint16_t *)g)[i]);
    return ((const float *)g)[i];
}

template <int LT>
__device__ __forceinline__ uint16_t to_lowp(float p)
{
    return LT == KERN_BF16 ? kern_f32_to_bf16(p) : kern_f32_to_f16(p);
}

/* Elements [0, head) and [tail, n): index k < head is element k, the others tail + k - head. */
template <int GT, int LT>
__global__ void adam_scalar(const kern_adam_scalars s, const kern_adam_bufs b, int64_t head,
                            int64_t tail)
{
    const int64_t count = head + (b.numel - tail);
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < count;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k < head ? k : tail + (k - head);
        kern__adam_elem(&s, load_grad<GT>(b.grad, i), &b.param[i], &b.exp_avg[i], &b.exp_avg_sq[i]);
        if (LT != KERN_NONE)
            ((uint16_t *)b.param_lowp)[i] = to_lowp<LT>(b.param[i]);
    }
}

/* Elements [head, head + 4 nvec) in groups of four, every access 16 bytes (8 for 16-bit arrays). */
template <int GT, int LT>
__global__ void adam_vec4(const kern_adam_scalars s, const kern_adam_bufs b, int64_t head,
                          int64_t nvec)
{
    float4 *p4 = (float4 *)(b.param + head);
    float4 *m4 = (float4 *)(b.exp_avg + head);
    float4 *v4 = (float4 *)(b.exp_avg_sq + head);
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nvec;
         k += (int64_t)gridDim.x * blockDim.x) {
        float g[4];
        if (GT == KERN_F32) {
            float4 t = ((const float4 *)((const float *)b.grad + head))[k];
            g[0] = t.x; g[1] = t.y; g[2] = t.z; g[3] = t.w;
        } else {
            uint2 t = ((const uint2 *)((const uint16_t *)b.grad + head))[k];
            uint16_t h[4] = {(uint16_t)(t.x & 0xffffu), (uint16_t)(t.x >> 16),
                             (uint16_t)(t.y & 0xffffu), (uint16_t)(t.y >> 16)};
            for (int j = 0; j < 4; j++)
                g[j] = GT == KERN_BF16 ? kern_bf16_to_f32(h[j]) : kern_f16_to_f32(h[j]);
        }
        float4 p = p4[k], m = m4[k], v = v4[k];
        kern__adam_elem(&s, g[0], &p.x, &m.x, &v.x);
        kern__adam_elem(&s, g[1], &p.y, &m.y, &v.y);
        kern__adam_elem(&s, g[2], &p.z, &m.z, &v.z);
        kern__adam_elem(&s, g[3], &p.w, &m.w, &v.w);
        p4[k] = p;
        m4[k] = m;
        v4[k] = v;
        if (LT != KERN_NONE) {
            uint2 o;
            o.x = (uint32_t)to_lowp<LT>(p.x) | ((uint32_t)to_lowp<LT>(p.y) << 16);
            o.y = (uint32_t)to_lowp<LT>(p.z) | ((uint32_t)to_lowp<LT>(p.w) << 16);
            ((uint2 *)((uint16_t *)b.param_lowp + head))[k] = o;
        }
    }
}

static bool aligned(const void *ptr, int64_t index, int elem_bytes, int align)
{
    return ((uintptr_t)ptr + (uintptr_t)(index * elem_bytes)) % (uintptr_t)align == 0;
}

/* Blocks for `work` grid-stride items: enough to fill the device (8 resident blocks of 256 per
 * SM), never more than the work needs. */
static unsigned grid_for(int64_t work, int sms)
{
    int64_t blocks = (work + KERN__BLOCK - 1) / KERN__BLOCK;
    int64_t cap = (int64_t)sms * 8;
    return (unsigned)(blocks < cap ? blocks : cap);
}

template <int GT, int LT>
static int launch(const kern_adam_scalars *s, const kern_adam_bufs *b, cudaStream_t stream,
                  struct rl_err *e)
{
    int dev = 0, sms = 0;
    KERN__CUDA_CHECK(cudaGetDevice(&dev));
    KERN__CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int64_t n = b->numel;
    const int gbytes = kern_dtype_bytes(b->grad_dtype);
    /* head: elements before p reaches a 16-byte boundary (p is at least 4-byte aligned). */
    int64_t head = (int64_t)((16u - ((uintptr_t)b->param & 15u)) & 15u) / 4;
    bool vec = ((uintptr_t)b->param & 3u) == 0 && head < n;
    if (vec)
        vec = aligned(b->param, head, 4, 16) && aligned(b->exp_avg, head, 4, 16) &&
              aligned(b->exp_avg_sq, head, 4, 16) && aligned(b->grad, head, gbytes, 4 * gbytes) &&
              (LT == KERN_NONE || aligned(b->param_lowp, head, 2, 8));
    const int64_t nvec = vec ? (n - head) / 4 : 0;
    if (!vec)
        head = n;
    const int64_t tail = head + 4 * nvec;
    if (nvec > 0) {
        adam_vec4<GT, LT><<<grid_for(nvec, sms), KERN__BLOCK, 0, stream>>>(*s, *b, head, nvec);
        KERN__CUDA_CHECK(cudaGetLastError());
    }
    const int64_t rest = head + (n - tail);
    if (rest > 0) {
        adam_scalar<GT, LT><<<grid_for(rest, sms), KERN__BLOCK, 0, stream>>>(*s, *b, head, tail);
        KERN__CUDA_CHECK(cudaGetLastError());
    }
    return 0;
}

template <int GT>
static int launch_lt(const kern_adam_scalars *s, const kern_adam_bufs *b, cudaStream_t stream,
                     struct rl_err *e)
{
    switch (b->param_lowp_dtype) {
    case KERN_BF16: return launch<GT, KERN_BF16>(s, b, stream, e);
    case KERN_F16: return launch<GT, KERN_F16>(s, b, stream, e);
    default: return launch<GT, KERN_NONE>(s, b, stream, e);
    }
}

extern "C" int kern_adam_cuda(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                              cudaStream_t stream, struct rl_err *e)
{
    int rc = kern_adam_bufs_check(b, e);
    if (rc)
        return rc;
    if (b->numel == 0)
        return 0;
    switch (b->grad_dtype) {
    case KERN_BF16: return launch_lt<KERN_BF16>(s, b, stream, e);
    case KERN_F16: return launch_lt<KERN_F16>(s, b, stream, e);
    default: return launch_lt<KERN_F32>(s, b, stream, e);
    }
}

extern "C" int kern_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();   /* clear the non-sticky error */
        return 0;
    }
    return n;
}
