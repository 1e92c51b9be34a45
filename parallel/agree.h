#pragma once

// One error, once. A set-up error that every rank detects alike (a batch size that does not
// divide among the ranks, a missing data folder) would otherwise be printed by every rank,
// interleaved, before MPI_Abort adds Open MPI's own messages. Instead, every rank hands its
// set-up outcome to AgreeAcrossRanks at the same point; when any rank failed, every rank gets
// the same status naming which ranks failed and why, and Abort prints it once, on rank 0, and
// ends each rank normally with a non-zero exit code.

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

// Collective over `world`: every rank must call it, with the outcome of work that had no
// collectives in it. OK when every rank's `local` is OK; otherwise the same agreed error on
// every rank (IsAgreedError), its message each distinct error once with the ranks that had it,
// after "<context>: " when a context is given.
absl::Status AgreeAcrossRanks(const absl::Status& local, Communicator& world,
                              absl::string_view context = "");

// A setting every rank must share, by name ("--lr") and canonical value ("0.1").
using Setting = std::pair<std::string, std::string>;

// Collective over `world`: OK when every rank passes the same settings; otherwise the same
// agreed error on every rank naming each setting that differs and which ranks have which value:
// "<what>: --lr (0.1 on rank 0; 0.2 on rank 1), --seed (...)". Values must not hold '\0'.
absl::Status AgreeOnSettings(const std::vector<Setting>& settings, Communicator& world,
                             absl::string_view what);

// Collective over `world`: every rank's `text`, in rank order.
absl::StatusOr<std::vector<std::string>> GatherStrings(absl::string_view text, Communicator& world);

// True for the statuses AgreeAcrossRanks and AgreeOnSettings return: every rank holds the same
// one.
bool IsAgreedError(const absl::Status& status);

// The message of an agreed error, from each rank's (code, message), in rank order: the message
// alone when every rank failed alike, else "rank 1: ...; ranks 2, 3: ...".
std::string DescribeRankErrors(const std::vector<absl::Status>& statuses);

}  // namespace lockstep::parallel
