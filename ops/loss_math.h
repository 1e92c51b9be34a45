#pragma once

// Per-row math of the softmax cross-entropy, its gradient and ArgMax (ops/cpu/loss.cc,
// ops/cuda/loss.cu). A CUDA block splits a row between its threads: each takes a share
// (elements first, first + stride, ...), and the shares' maxima and sums are combined. The CPU
// kernels take one share of the whole row (first 0, stride 1).

#include <cmath>
#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

// Elements first, first + stride, ... of a row: one thread's part of it.
struct RowShare {
  int64_t first = 0;
  int64_t stride = 1;
};

// As std::max(a, b): a unless a < b.
LS_HOST_DEVICE inline float MaxOf(float a, float b) { return a < b ? b : a; }

// The largest x[j] of the share; -inf when the share is empty.
LS_HOST_DEVICE inline float ShareMax(const float* x, int64_t classes, RowShare share) {
  float max = -INFINITY;
  for (int64_t j = share.first; j < classes; j += share.stride) max = MaxOf(max, x[j]);
  return max;
}

// Writes exp(x[j] - max) into probs[j] over the share and returns their sum in double.
// Subtracting the row maximum keeps exp() from overflowing.
LS_HOST_DEVICE inline double ShareExpSum(const float* x, int64_t classes, float max, RowShare share,
                                         float* probs) {
  double sum = 0.0;
  for (int64_t j = share.first; j < classes; j += share.stride) {
    probs[j] = expf(x[j] - max);
    sum += probs[j];
  }
  return sum;
}

// Divides the share's exponentials by the row's sum.
LS_HOST_DEVICE inline void ShareNormalize(float* probs, int64_t classes, double sum,
                                          RowShare share) {
  const float inverse = static_cast<float>(1.0 / sum);
  for (int64_t j = share.first; j < classes; j += share.stride) probs[j] *= inverse;
}

LS_HOST_DEVICE inline bool LabelInRange(int32_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

// -log softmax(x)[label] = log(sum) - (x[label] - max), given the row's max and exp-sum. NaN for
// a label outside [0, classes): the GPU cannot fail the step, so the loss shows it.
LS_HOST_DEVICE inline double RowCrossEntropy(const float* x, int64_t classes, int32_t label,
                                             float max, double sum) {
  if (!LabelInRange(label, classes)) return NAN;
  return log(sum) - (x[label] - max);
}

// The mean over the batch of the rows' losses.
LS_HOST_DEVICE inline float MeanLoss(double total, int64_t rows) {
  return static_cast<float>(total / rows);
}

// d loss / d logits per unit of probs: dloss / N.
LS_HOST_DEVICE inline float CrossEntropyGradScale(float dloss, int64_t rows) {
  return dloss / static_cast<float>(rows);
}

// dlogits[i, j] = (probs[i, j] - onehot(label)[j]) * scale, rounded as prob * scale - scale at
// the label; NaN for a bad label. Subtracting +0 elsewhere changes no bits and, unlike a select
// of the difference, lets the CPU loop vectorize.
LS_HOST_DEVICE inline float CrossEntropyGrad(float prob, int64_t j, int32_t label, int64_t classes,
                                             float scale) {
  if (!LabelInRange(label, classes)) return NAN;
  return prob * scale - (j == label ? scale : 0.0f);
}

// A share's maximum and its first index; index -1 for an empty share.
struct ArgMaxCandidate {
  float value;
  int64_t index;
};

LS_HOST_DEVICE inline ArgMaxCandidate ShareArgMax(const float* x, int64_t classes, RowShare share) {
  if (share.first >= classes) return {-INFINITY, -1};
  int64_t best = share.first;
  for (int64_t j = share.first + share.stride; j < classes; j += share.stride) {
    if (x[j] > x[best]) best = j;
  }
  return {x[best], best};
}

// The larger candidate; the smaller index on a tie, so shares combine to the row's first
// maximum whatever their order.
LS_HOST_DEVICE inline ArgMaxCandidate BetterArgMax(ArgMaxCandidate a, ArgMaxCandidate b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

}  // namespace lockstep::math
