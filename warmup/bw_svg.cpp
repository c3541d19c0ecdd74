#include "warmup/bw_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/strings.h"

namespace sl::warmup {

namespace {

constexpr double kW = 760, kH = 420, kLeft = 70, kRight = 200, kTop = 40, kBottom = 50;

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string SizeLabel(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:g}G", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:g}M", bytes / (1 << 20));
  if (bytes >= 1 << 10) return fmt::format("{:g}K", bytes / (1 << 10));
  return fmt::format("{:g}", bytes);
}

struct Scale {
  double x0 = 0, x1 = 1, y1 = 1;
  double X(double bytes) const {
    double lx = std::log2(std::max(bytes, 1.0));
    return kLeft + (x1 > x0 ? (lx - x0) / (x1 - x0) : 0.5) * (kW - kLeft - kRight);
  }
  double Y(double gbps) const { return kH - kBottom - gbps / y1 * (kH - kTop - kBottom); }
};

std::string Polyline(const Scale& s, const std::vector<BusbwPoint>& pts, const std::string& color,
                     double width, const std::string& dash) {
  if (pts.empty()) return "";
  std::string d;
  for (const auto& p : pts) d += fmt::format("{:.1f},{:.1f} ", s.X(p.bytes), s.Y(p.busbw_gbps));
  std::string out =
      fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} points=\"{}\"/>\n",
                  color, width, dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"", Trim(d));
  for (const auto& p : pts)
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"/>\n", s.X(p.bytes),
                       s.Y(p.busbw_gbps), width + 1, color);
  return out;
}

}  // namespace

std::string BandwidthSvg(const SvgInput& in) {
  std::vector<const std::vector<BusbwPoint>*> all = {&in.measured, &in.baseline};
  for (const auto& n : in.nodes) all.push_back(&n.points);
  Scale s;
  double lo = 1e30, hi = 0, top = in.expected_gbps;
  for (const auto* v : all)
    for (const auto& p : *v) {
      lo = std::min(lo, std::log2(std::max<double>(p.bytes, 1)));
      hi = std::max(hi, std::log2(std::max<double>(p.bytes, 1)));
      top = std::max(top, p.busbw_gbps);
    }
  if (lo > hi) lo = hi = 20;
  s.x0 = lo;
  s.x1 = hi;
  s.y1 = top > 0 ? top * 1.1 : 1;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
      kW, kH, kLeft, Escape(in.title));
  // Axes and ticks: one per power of two that holds a point, busbw in five steps.
  out += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n",
      kLeft, kH - kBottom, kW - kRight, kTop);
  for (int e = static_cast<int>(std::floor(lo)); e <= static_cast<int>(std::ceil(hi)); ++e)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       s.X(std::ldexp(1.0, e)), kH - kBottom + 16, SizeLabel(std::ldexp(1.0, e)));
  for (int i = 0; i <= 5; ++i) {
    double v = s.y1 * i / 5;
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.3g}</text>\n", kLeft - 6,
                       s.Y(v) + 4, v);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\">message size (bytes)</text>\n", kLeft + 180, kH - 10);
  out +=
      fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\">busbw (GB/s)</text>\n",
                  kH / 2, kH / 2);
  std::vector<std::pair<std::string, std::string>> legend;  // (color, text)
  if (in.expected_gbps > 0) {
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"green\" "
        "stroke-dasharray=\"6 4\"/>\n",
        kLeft, s.Y(in.expected_gbps), kW - kRight, s.Y(in.expected_gbps));
    legend.emplace_back("green", fmt::format("expected {:.1f} GB/s", in.expected_gbps));
  }
  if (!in.baseline.empty()) {
    out += Polyline(s, in.baseline, "gray", 1.5, "3 3");
    legend.emplace_back("gray", "baseline");
  }
  static const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#9467bd", "#8c564b",
                                   "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  for (std::size_t i = 0; i < in.nodes.size(); ++i) {
    const auto& n = in.nodes[i];
    std::string color = n.highlight ? "red" : kPalette[i % 8];
    out += Polyline(s, n.points, color, n.highlight ? 3 : 1.2, "");
    legend.emplace_back(color, n.name + (n.highlight ? " (slow)" : ""));
  }
  if (!in.measured.empty()) {
    out += Polyline(s, in.measured, "black", 2.5, "");
    legend.emplace_back("black", "job-wide sweep");
  }
  for (std::size_t i = 0; i < legend.size(); ++i)
    out += fmt::format(
        "<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" fill=\"{2}\"/>\n<text x=\"{3}\" "
        "y=\"{4}\">{5}</text>\n",
        kW - kRight + 12, kTop + 18.0 * i, legend[i].first, kW - kRight + 30, kTop + 18.0 * i + 11,
        Escape(legend[i].second));
  return out + "</svg>\n";
}

}  // namespace sl::warmup
