#include "launcher/watch_screen.h"

#include <curses.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "watchdog/watch/render.h"

namespace sl::launcher {
namespace {

std::atomic<bool> g_quit{false};
void OnQuit(int) { g_quit = true; }

double ScreenNowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

enum Pair : short { kRed = 1, kYellow, kGreen, kCyan };

attr_t Attr(watch::Style s, bool color) {
  const auto pair = [color](short p) { return color ? COLOR_PAIR(p) : 0; };
  switch (s) {
    case watch::Style::kBad:
      return A_BOLD | pair(kRed);
    case watch::Style::kStale:
      return (color ? 0 : A_BOLD) | pair(kYellow);
    case watch::Style::kGood:
      return pair(kGreen);
    case watch::Style::kTitle:
      return A_BOLD | pair(kCyan);
    case watch::Style::kHeader:
      return A_UNDERLINE;
    case watch::Style::kDim:
      return A_DIM;
    case watch::Style::kNormal:
      return A_NORMAL;
  }
  return A_NORMAL;
}

struct View {
  watch::Snapshot snap;
  std::string filter;
  bool editing = false;
  bool detail = false;
  std::size_t selected = 0;
  std::string detail_dir;
  std::vector<const watch::Row*> Visible() const {
    std::vector<const watch::Row*> rows;
    for (const auto& r : snap.rows) {
      if (watch::RowMatches(r, filter)) rows.push_back(&r);
    }
    return rows;
  }
};

void PutLine(int y, const watch::Line& l, bool color, attr_t extra = 0) {
  attrset(Attr(l.style, color) | extra);
  mvaddnstr(y, 0, l.text.c_str(), COLS);
  attrset(A_NORMAL);
}

void DrawList(const View& v, bool color) {
  // The header's height first (no rows formatted), then only the rows that fit.
  auto head = watch::RenderSnapshot(v.snap, static_cast<std::size_t>(COLS), v.filter, 0, 0);
  std::size_t first_row = 0;
  while (first_row < head.size() && head[first_row].style != watch::Style::kHeader) ++first_row;
  ++first_row;  // rows start after the column titles
  const auto room = static_cast<std::size_t>(std::max(1, LINES - 2 - static_cast<int>(first_row)));
  const std::size_t top = v.selected >= room ? v.selected - room + 1 : 0;
  auto lines = watch::RenderSnapshot(v.snap, static_cast<std::size_t>(COLS), v.filter, top, room);
  int y = 0;
  for (std::size_t i = 0; i < lines.size() && y < LINES - 1; ++i) {
    const bool is_row = i >= first_row && lines[i].style != watch::Style::kDim;
    const bool selected = is_row && top + (i - first_row) == v.selected;
    PutLine(y++, lines[i], color, selected ? A_REVERSE : 0);
  }
}

void DrawDetail(const View& v, watch::RunRootReader& reader, bool color) {
  const watch::Row* row = nullptr;
  for (const auto& r : v.snap.rows) {
    if (r.dir == v.detail_dir) row = &r;
  }
  if (!row) {
    mvaddstr(0, 0, ("node " + v.detail_dir + " is gone from the run root").c_str());
    return;
  }
  // A running node's tail is what its supervisor published; an ended one's, its .tail files.
  const auto tail = reader.Tail(row->dir, 20);
  auto lines = watch::RenderDetail(*row, tail, static_cast<std::size_t>(COLS));
  for (int y = 0; y < LINES - 1 && y < static_cast<int>(lines.size()); ++y) {
    PutLine(y, lines[static_cast<std::size_t>(y)], color);
  }
}

void Draw(const View& v, watch::RunRootReader& reader, bool color) {
  erase();
  if (v.detail) {
    DrawDetail(v, reader, color);
  } else {
    DrawList(v, color);
  }
  std::string foot = v.editing  ? "filter: " + v.filter + "_  (Enter apply, Esc clear)"
                     : v.detail ? "Enter/Esc back  q quit"
                                : "q quit  / filter  Up/Down select  Enter details";
  attrset(A_REVERSE);
  mvaddnstr(LINES - 1, 0, foot.c_str(), COLS);
  attrset(A_NORMAL);
  refresh();
}

// One key; false to quit.
bool OnKey(int ch, View* v) {
  if (v->editing) {
    if (ch == '\n' || ch == KEY_ENTER) v->editing = false;
    if (ch == 27) v->filter.clear(), v->editing = false;
    if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && !v->filter.empty()) v->filter.pop_back();
    if (ch >= 32 && ch < 127) v->filter.push_back(static_cast<char>(ch));
    v->selected = 0;
    return true;
  }
  const std::size_t n = v->Visible().size();
  switch (ch) {
    case 'q':
      return false;
    case '/':
      v->editing = !v->detail;
      break;
    case KEY_UP:
    case 'k':
      v->selected = v->selected ? v->selected - 1 : 0;
      break;
    case KEY_DOWN:
    case 'j':
      v->selected = n && v->selected + 1 < n ? v->selected + 1 : v->selected;
      break;
    case 27:
      v->detail = false;
      break;
    case '\n':
    case KEY_ENTER:
      if (v->detail) {
        v->detail = false;
      } else if (v->selected < n) {
        v->detail = true;
        v->detail_dir = v->Visible()[v->selected]->dir;
      }
      break;
    default:
      break;
  }
  return true;
}

}  // namespace

int RunScreen(watch::RunRootReader& reader, const ScreenOptions& o) {
  struct sigaction sa {};
  sa.sa_handler = OnQuit;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  set_escdelay(50);
  curs_set(0);
  const bool color = o.color && has_colors();
  if (color) {
    start_color();
    use_default_colors();
    init_pair(kRed, COLOR_RED, -1);
    init_pair(kYellow, COLOR_YELLOW, -1);
    init_pair(kGreen, COLOR_GREEN, -1);
    init_pair(kCyan, COLOR_CYAN, -1);
  }
  View v;
  watch::ParseMemo memo;
  auto next = std::chrono::steady_clock::now();
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(o.interval_s));
  while (!g_quit) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      v.snap = watch::BuildSnapshot(reader.Read(), ScreenNowUnix(), o.watch, &memo);
      v.selected = std::min(v.selected, v.Visible().empty() ? 0 : v.Visible().size() - 1);
      next = now + period;
      Draw(v, reader, color);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    timeout(static_cast<int>(std::clamp<long long>(wait, 10, 1000)));
    const int ch = getch();
    if (ch == ERR) continue;
    if (ch == KEY_RESIZE) {
      Draw(v, reader, color);
      continue;
    }
    if (!OnKey(ch, &v)) break;
    Draw(v, reader, color);
  }
  endwin();
  return 0;
}

}  // namespace sl::launcher
