#include "train/summary/curves_plot.h"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/file_io.h"
#include "core/paths.h"
#include "train/summary/summary_writer.h"

extern char** environ;

namespace lockstep::train::summary {
namespace {

// tag -> step -> value; later records of a step replace earlier ones.
using Series = std::map<std::string, std::map<int64_t, double>>;

Series LatestByStep(const std::vector<proto::MetricRecord>& records) {
  Series series;
  for (const proto::MetricRecord& record : records) {
    if (std::isfinite(record.value())) series[record.tag()][record.step()] = record.value();
  }
  return series;
}

// A gnuplot datablock "$name << EOD ... EOD" of (step, value * scale) rows.
std::string DataBlock(const std::string& name, const std::map<int64_t, double>& points,
                      double scale) {
  std::string block = absl::StrCat("$", name, " << EOD\n");
  for (const auto& [step, value] : points) absl::StrAppend(&block, step, " ", value * scale, "\n");
  return absl::StrCat(block, "EOD\n");
}

struct Curve {
  const char* tag;
  const char* block;  // datablock name
  const char* style;
  const char* title;
  double scale;
  bool accuracy_panel;  // the lower panel; the loss panel otherwise
};
constexpr Curve kCurves[] = {
    {"train/loss", "train_loss", "lines lw 1.5 lc rgb '#1f77b4'", "train loss", 1.0, false},
    {"val/loss", "val_loss", "linespoints pt 7 lw 2 lc rgb '#d62728'", "validation loss", 1.0,
     false},
    {"val/accuracy", "val_accuracy", "linespoints pt 7 lw 2 lc rgb '#2ca02c'",
     "validation accuracy", 100.0, true}};

// "plot $a with ... title '...', ..." over the panel's curves that have data; empty if none has.
std::string PlotCommand(const Series& series, bool accuracy_panel) {
  std::vector<std::string> parts;
  for (const Curve& curve : kCurves) {
    if (curve.accuracy_panel == accuracy_panel && series.contains(curve.tag)) {
      parts.push_back(
          absl::StrCat("$", curve.block, " with ", curve.style, " title '", curve.title, "'"));
    }
  }
  return parts.empty() ? "" : absl::StrCat("plot ", absl::StrJoin(parts, ", "), "\n");
}

std::string Script(const Series& series, const std::string& loss_plot,
                   const std::string& accuracy_plot) {
  std::string script = absl::StrCat("set terminal pngcairo size ", kCurvesWidth, ",", kCurvesHeight,
                                    " font 'sans,11'\n", "set output '", kCurvesFileName, "'\n");
  int64_t last_step = 1;
  for (const Curve& curve : kCurves) {
    if (!series.contains(curve.tag)) continue;
    const std::map<int64_t, double>& points = series.at(curve.tag);
    absl::StrAppend(&script, DataBlock(curve.block, points, curve.scale));
    last_step = std::max(last_step, points.rbegin()->first);
  }
  // One step axis for both panels, so that an epoch's points line up.
  absl::StrAppend(&script, "set multiplot layout 2,1 title 'Lockstep training'\n",
                  "set grid\nset key top right\nset xlabel 'step'\n", "set xrange [0:", last_step,
                  "]\n");
  if (!loss_plot.empty()) absl::StrAppend(&script, "set ylabel 'loss'\n", loss_plot);
  if (!accuracy_plot.empty()) {
    absl::StrAppend(&script, "set ylabel 'validation accuracy (%)'\nset yrange [0:100]\n",
                    "set key bottom right\n", accuracy_plot);
  }
  return absl::StrCat(script, "unset multiplot\n");
}

// Runs `gnuplot SCRIPT` in `directory`; false when there is no gnuplot to run.
absl::StatusOr<bool> RunGnuplot(const std::string& directory, const std::string& script_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The script names its output relative to its own directory.
  if (const int failed = posix_spawn_file_actions_addchdir_np(&actions, directory.c_str())) {
    posix_spawn_file_actions_destroy(&actions);
    return absl::ErrnoToStatus(failed, "preparing gnuplot");
  }
  std::string program = "gnuplot", script = kCurvesScriptName;
  char* argv[] = {program.data(), script.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT) return false;
  if (spawned != 0) return absl::ErrnoToStatus(spawned, "starting gnuplot");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::ErrnoToStatus(errno, "waiting for gnuplot");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(
        "gnuplot failed on ", script_path, " (", WIFEXITED(status) ? "exit code " : "signal ",
        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), ")"));
  }
  return true;
}

}  // namespace

absl::StatusOr<PlotOutcome> PlotCurves(const std::string& directory) {
  LS_ASSIGN_OR_RETURN(std::vector<proto::MetricRecord> records,
                      ReadMetrics(JoinPath(directory, kMetricsFileName)));
  const Series series = LatestByStep(records);
  const std::string loss_plot = PlotCommand(series, /*accuracy_panel=*/false);
  const std::string accuracy_plot = PlotCommand(series, /*accuracy_panel=*/true);
  if (loss_plot.empty() && accuracy_plot.empty()) return PlotOutcome::kNoData;
  const std::string script_path = JoinPath(directory, kCurvesScriptName);
  // gnuplot writes the picture itself: a FIFO there would block it, a directory fail it.
  LS_RETURN_IF_ERROR(CheckOutputPath(JoinPath(directory, kCurvesFileName)));
  LS_RETURN_IF_ERROR(WriteFileAtomically(script_path, Script(series, loss_plot, accuracy_plot)));
  LS_ASSIGN_OR_RETURN(bool ran, RunGnuplot(directory, script_path));
  return ran ? PlotOutcome::kDrawn : PlotOutcome::kNoGnuplot;
}

}  // namespace lockstep::train::summary
