// The two error-propagation macros Debian 12's abseil (20220623) lacks.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPUSORT_CONCAT_INNER_(a, b) a##b
#define GPUSORT_CONCAT_(a, b) GPUSORT_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status gpusort_status_ = (expr);         \
    if (!gpusort_status_.ok()) return gpusort_status_; \
  } while (false)

// `lhs = value of expr` (an absl::StatusOr<T>), or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(GPUSORT_CONCAT_(gpusort_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
