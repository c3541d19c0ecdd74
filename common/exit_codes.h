#pragma once
// Every exit status safe-launch itself produces, in one place (documented in doc/manual.md).
// A supervised job's own status (0..255, or 128+signal) passes through unchanged, so these are
// chosen from conventions a cluster engineer already knows (sysexits.h, timeout(1), POSIX shells).

namespace sl::exit_code {

inline constexpr int kOk = 0;
/// `preflight`: at least one check failed (a `fail` outcome that was not waived).
inline constexpr int kChecksFailed = 1;
/// Bad command line, unreadable --sysroot, bad recipe: nothing was checked or started.
inline constexpr int kUsage = 2;
/// safe-launch hit an internal error (EX_SOFTWARE).
inline constexpr int kInternal = 70;
/// `run`: the warm-up collective failed and --on-warmup-fail=abort (EX_UNAVAILABLE).
inline constexpr int kWarmupFailed = 69;
/// `run`: the local preflight failed and --on-preflight-fail=abort (EX_CONFIG).
inline constexpr int kPreflightFailed = 78;
/// `run`: a hang was detected, diagnostics captured, job stopped (as timeout(1) reports).
inline constexpr int kHang = 124;
/// The job's command exists but could not be executed (POSIX shell convention).
inline constexpr int kCannotExecute = 126;
/// The job's command was not found (POSIX shell convention).
inline constexpr int kNotFound = 127;
/// A job killed by signal S exits 128 + S.
inline constexpr int kSignalBase = 128;

}  // namespace sl::exit_code
