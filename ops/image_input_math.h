#pragma once

// Per-element math of image normalization, for the dataset's Normalize (dataset/image_ops.cc) and
// a batch's input stage, the CPU backend's loop (ops/cpu/image_input.cc) and the CUDA kernel
// (ops/cuda/image_input.cu): uint8 (N, H, W, C) pixels become the float32 (N, C, H, W) values of
// Normalize followed by HWC2CHW, bit for bit: value * (1 / std) + (-mean / std), per channel,
// without a fused multiply-add (the host build has none; the device build must not contract
// either). Header-only, so dataset/ includes it without linking ops/ (which does not depend on
// dataset/).

#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

inline constexpr int kMaxImageChannels = 4;

// One channel's factors: (value - mean) / std becomes value * scale + shift.
inline float NormalizationScale(float std) { return 1.0f / std; }
inline float NormalizationShift(float mean, float std) { return -mean / std; }

// The per-channel factors of a batch, computed once on the host.
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
    n.scale[c] = NormalizationScale(std[c]);
    n.shift[c] = NormalizationShift(mean[c], std[c]);
  }
  return n;
}

// One channel value of a pixel, uint8 or float32 (every uint8 is exact in float).
LS_HOST_DEVICE inline float NormalizePixel(float value, float scale, float shift) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(value, scale), shift);
#else
  return value * scale + shift;
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
  return NormalizePixel(static_cast<float>(nhwc[(image * plane + pixel) * channels + c]),
                        n.scale[c], n.shift[c]);
}

}  // namespace lockstep::math
