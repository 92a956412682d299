// The close report: lines kept for getCloseReport(), printed by exit layers, in the same format
// as @devexit/core's formatReportLine (test/reportFormat.test.ts holds the two to one format).
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "internal.h"

#if defined(_WIN32)
#include <process.h>
#define DEVEXIT_GETPID _getpid
#else
#include <unistd.h>
#define DEVEXIT_GETPID getpid
#endif

namespace devexit {
namespace {

struct Report {
  std::mutex mu;
  std::vector<ReportLine> lines;
  std::vector<std::string> warnings;  // not yet handed out
  std::set<std::string> warned;       // handed out or queued: each warning once per process
};
Report &R() {
  static Report &r = *new Report();
  return r;
}

std::string Ms(double ms, const char *format) {
  char out[32];
  snprintf(out, sizeof out, format, ms);
  return out;
}

std::string LineJson(const ReportLine &r) {
  std::string out = "{\"device\":{\"type\":\"" + JsonEscape(TypeName(r.type)) + "\",\"typeId\":" +
                    std::to_string(r.type) + ",\"index\":" + std::to_string(r.index) + "},\"service\":\"" +
                    JsonEscape(r.service) + "\",\"layer\":\"" + JsonEscape(r.layer) + "\",\"ms\":" + Ms(r.ms, "%.3f") +
                    ",\"outcome\":\"" + r.outcome + "\",\"pid\":" + std::to_string(DEVEXIT_GETPID());
  if (!r.error.empty()) out += ",\"error\":\"" + JsonEscape(r.error) + "\"";
  if (r.drained >= 0) out += std::string(",\"drained\":") + (r.drained ? "true" : "false");
  if (r.dropped >= 0) out += ",\"dropped\":" + std::to_string(r.dropped);
  return out + "}";
}

}  // namespace

std::string JsonEscape(const std::string &in) {
  std::string out;
  out.reserve(in.size());
  for (unsigned char c : in) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

size_t CopyOut(const std::string &s, char *buf, size_t size) {
  if (buf && size > 0) {
    size_t n = std::min(s.size(), size - 1);
    memcpy(buf, s.data(), n);
    buf[n] = 0;
  }
  return s.size();
}

std::string ServiceName(uint16_t type, uint32_t index, const std::string &service) {
  return TypeName(type) + ":" + std::to_string(index) + "/" + service;
}

std::string FormatReportLine(const ReportLine &r, ReportMode mode) {
  if (mode == kReportJson) return "devexit:report " + LineJson(r);
  return "devexit: " + std::string(r.outcome) + " " + ServiceName(r.type, r.index, r.service) + " in " +
         Ms(r.ms, "%.2f") + " ms (" + r.layer + ")";
}

std::string ReportText(const std::vector<ReportLine> &lines, bool failures) {
  const ReportMode mode = CurrentReportMode();
  std::string out;
  for (const ReportLine &r : lines) {
    if (failures && strcmp(r.outcome, "error") == 0)
      out += "devexit: close of " + ServiceName(r.type, r.index, r.service) + " failed: " + r.error + "\n";
    if (mode != kReportOff) out += FormatReportLine(r, mode) + "\n";
  }
  return out;
}

void RecordReport(std::vector<ReportLine> lines) {
  Report &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  r.lines.reserve(r.lines.size() + lines.size());
  for (auto &l : lines) r.lines.push_back(std::move(l));
}

std::string ReportLinesJson(const std::vector<ReportLine> &lines) {
  std::string out;
  for (const ReportLine &l : lines) out += LineJson(l) + "\n";
  return out;
}

size_t ReportJson(char *buf, size_t size) {
  Report &r = R();
  std::string out;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const ReportLine &l : r.lines) out += LineJson(l) + "\n";
  }
  return CopyOut(out, buf, size);
}

void AddWarning(const std::string &text) {
  Report &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.warned.insert(text).second) r.warnings.push_back(text);
}

// Two-call protocol (length, then text): the second call hands the warnings out and forgets them.
size_t TakeWarnings(char *buf, size_t size) {
  Report &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string out;
  for (const std::string &w : r.warnings) out += w + "\n";
  if (buf && size > out.size()) r.warnings.clear();
  return CopyOut(out, buf, size);
}

}  // namespace devexit
