#pragma once

// The AllReduce kernel of devices with streams, over DeviceCollectives (device_collectives.h):
// the compute stream's work so far (the bucket's last gradient) is followed on the collectives'
// stream, where the bucket is reduced while the compute stream goes on with the backward; the
// executor's Wait, before the bucket's first reader (its optimizer update), makes the compute
// stream wait on the reduction's end. The host never blocks inside a step. A bucket with a
// narrower wire dtype is converted into it and back on the collectives' stream, around the
// reduction (wire_bucket.h). A recorded step (Executor::ReplayAfter) holds the reduction too;
// each launch of it has the collectives watch it again.
//
// Devices register it with their own element conversion:
//   REGISTER_KERNEL({.op = "AllReduce", .device = DeviceType::kCUDA, .dtype = DType::kF32,
//                    .create = StreamAllReduceFactory(ConvertOnDevice)});

#include "graph/kernel.h"
#include "parallel/ops/wire_bucket.h"

namespace lockstep::parallel {

// A kernel factory whose wire conversions run `convert` on the collectives' stream.
KernelFactory StreamAllReduceFactory(ConvertFn convert);

}  // namespace lockstep::parallel
