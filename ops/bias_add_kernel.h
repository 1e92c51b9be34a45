#pragma once

// BiasAdd and its gradient on every backend: the Kernel reads the channels off the node once and
// hands the tensors to its backend's loops (ops/cpu/elementwise.cc, ops/cuda/elementwise.cc over
// ops/cuda/elementwise.cu). A backend's loops are a struct with
//   template <typename T>
//   static absl::Status BiasAdd(const T* x, const T* bias, T* y, const ChannelGeometry& g,
//                               const KernelIO& io);       // y = x + bias[c]
//   template <typename T>
//   static absl::Status BiasAddGrad(const T* dy, T* dbias, const ChannelGeometry& g,
//                                   const KernelIO& io);   // dbias[c] = sum of dy[:, c, :]
// over (N, C, inner...) values, T the backend's element type. Both want plain layouts.

#include "core/device.h"
#include "graph/kernel.h"
#include "ops/kernel_bases.h"

namespace lockstep {

template <typename Loops, typename T>
class BiasAddKernel : public ChannelsKernel {
 public:
  using ChannelsKernel::ChannelsKernel;
  absl::Status Run(const KernelIO& io) override {
    return Loops::BiasAdd(static_cast<const T*>(io.inputs[0].raw_data()),  // (N, C, ...)
                          static_cast<const T*>(io.inputs[1].raw_data()),  // (C)
                          static_cast<T*>(io.outputs[0].raw_data()),       // (N, C, ...)
                          geometry_, io);
  }
};

template <typename Loops, typename T>
class BiasAddGradKernel : public ChannelsKernel {
 public:
  using ChannelsKernel::ChannelsKernel;
  absl::Status Run(const KernelIO& io) override {
    return Loops::BiasAddGrad(static_cast<const T*>(io.inputs[0].raw_data()),  // (N, C, ...)
                              static_cast<T*>(io.outputs[0].raw_data()),       // (C)
                              geometry_, io);
  }
};

template <typename Loops>
struct BiasAddOf {
  template <typename T>
  using Kernel = BiasAddKernel<Loops, T>;
  template <typename T>
  using GradKernel = BiasAddGradKernel<Loops, T>;
};

// Registers BiasAdd and BiasAddGrad on `device` in f32, bf16 and f16, each in the element type
// `Elements` (a FloatElements) holds it in.
template <typename Loops, typename Elements>
bool RegisterBiasAddOn(DeviceType device) {
  return RegisterFloatKernels<BiasAddOf<Loops>::template Kernel, Elements>(
             {.op = "BiasAdd", .device = device}) &&
         RegisterFloatKernels<BiasAddOf<Loops>::template GradKernel, Elements>(
             {.op = "BiasAddGrad", .device = device});
}

}  // namespace lockstep
