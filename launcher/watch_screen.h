#pragma once
// `safe-launch watch` on a terminal: the thin ncurses screen over the model and its text
// rendering (watchdog/watch/). The only code that links ncurses.
#include "watchdog/watch/reader.h"
#include "watchdog/watch/snapshot.h"

namespace sl::launcher {

struct ScreenOptions {
  watch::WatchOptions watch;
  double interval_s = 1.0;
  bool color = true;  ///< false: NO_COLOR or --no-color (bold and reverse still mark rows)
};

/// Runs the live view until `q` (or SIGINT/SIGTERM); returns the exit status (0).
int RunScreen(watch::RunRootReader& reader, const ScreenOptions& options);

}  // namespace sl::launcher
