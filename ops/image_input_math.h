#pragma once

// Per-element math of a batch's input stage, for the CPU backend's loop (ops/cpu/image_input.cc)
// and the CUDA kernel (ops/cuda/image_input.cu): uint8 (N, H, W, C) pixels become the float32
// (N, C, H, W) values of the dataset's Normalize followed by HWC2CHW
// (dataset/image_ops.cc), bit for bit: value * (1 / std) + (-mean / std), per channel, without a
// fused multiply-add (the host build has none; the device build must not contract either).

#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

inline constexpr int kMaxImageChannels = 4;

// The per-channel factors, computed once on the host as the dataset's Normalize computes them.
struct ImageNormalization {
  int channels = 0;
  float scale[kMaxImageChannels] = {};
  float shift[kMaxImageChannels] = {};
};

inline ImageNormalization MakeImageNormalization(const float* mean, const float* std,
                                                 int channels) {
  ImageNormalization n;
  n.channels = channels;
  for (int c = 0; c < channels; ++c) {
    n.scale[c] = 1.0f / std[c];
    n.shift[c] = -mean[c] / std[c];
  }
  return n;
}

LS_HOST_DEVICE inline float NormalizePixel(uint8_t value, float scale, float shift) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(static_cast<float>(value), scale), shift);
#else
  return static_cast<float>(value) * scale + shift;
#endif
}

// Element `nchw` of the (N, C, H, W) output, from the (N, H, W, C) input: the output is written
// in order, the input read with a stride of C.
LS_HOST_DEVICE inline float NormalizedElement(const uint8_t* nhwc, int64_t nchw, int64_t plane,
                                              const ImageNormalization& n) {
  const int64_t channels = n.channels;
  const int64_t image = nchw / (channels * plane);
  const int c = static_cast<int>(nchw / plane % channels);
  const int64_t pixel = nchw % plane;
  return NormalizePixel(nhwc[(image * plane + pixel) * channels + c], n.scale[c], n.shift[c]);
}

}  // namespace lockstep::math
