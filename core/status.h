#pragma once

// Run-time errors are absl::Status / absl::StatusOr<T>. These macros propagate them.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#define LS_STATUS_CONCAT_INNER(a, b) a##b
#define LS_STATUS_CONCAT(a, b) LS_STATUS_CONCAT_INNER(a, b)

#define LS_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status ls_status_ = (expr);      \
    if (!ls_status_.ok()) return ls_status_; \
  } while (0)

#define LS_ASSIGN_OR_RETURN(lhs, expr) \
  LS_ASSIGN_OR_RETURN_IMPL(LS_STATUS_CONCAT(ls_statusor_, __LINE__), lhs, expr)

#define LS_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                             \
  if (!statusor.ok()) return statusor.status();       \
  lhs = std::move(statusor).value()

// Adds context in front of a failed status' message ("while loading x: <message>").
namespace lockstep {
inline absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}
}  // namespace lockstep
