#pragma once

// Draws DIR/curves.png from DIR/metrics.jsonl with gnuplot (a subprocess; Debian's gnuplot-nox):
// the training and validation loss over the global step above, the validation accuracy below.
// The script, with its data inline, is left in DIR/curves.gp, so `cd DIR && gnuplot curves.gp`
// draws the picture again (or, edited, another one).

#include <string>

#include "core/status.h"

namespace lockstep::train::summary {

inline constexpr char kCurvesFileName[] = "curves.png";
inline constexpr char kCurvesScriptName[] = "curves.gp";
inline constexpr int kCurvesWidth = 1000;  // pixels of curves.png
inline constexpr int kCurvesHeight = 800;

enum class PlotOutcome {
  kDrawn,
  kNoData,     // metrics.jsonl holds no loss or accuracy yet: nothing drawn
  kNoGnuplot,  // gnuplot is not installed (not on PATH): nothing drawn
};

// A step recorded twice (a run resumed from a checkpoint before it) is drawn with its latest
// value. Errors: metrics.jsonl unreadable, the script unwritable, gnuplot failing.
absl::StatusOr<PlotOutcome> PlotCurves(const std::string& directory);

}  // namespace lockstep::train::summary
