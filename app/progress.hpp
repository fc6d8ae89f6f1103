// A one-line progress display on a terminal (stderr): the current step and, once the run says how far
// it is (fraction), the percent done and the time left. Silent when stderr is not a terminal (a pipe, a
// log, ctest) or with --quiet: the line is redrawn with \r, which a log would only collect.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace logpb::app {

class Progress {
 public:
  explicit Progress(bool quiet) : Progress(quiet, isatty(STDERR_FILENO) != 0, stderr) {}
  Progress(bool quiet, bool terminal, std::FILE* out) : on_(!quiet && terminal), out_(out) {}

  // The current step.
  void operator()(const std::string& s) {
    step_ = s;
    draw();
  }
  // The share of the whole run done, 0..1 (the repetition loop sets it per run, a long method within a
  // run). The clock of "time left" starts at the first call.
  void fraction(double f) {
    if (!(f >= 0)) return;
    const auto now = std::chrono::steady_clock::now();
    if (!started_) {
      started_ = true;
      start_ = now;
    }
    fraction_ = std::min(from_ + std::min(f, 1.0) * (to_ - from_), 1.0);
    elapsed_s_ = std::chrono::duration<double>(now - start_).count();
  }
  // A command that runs several methods (quick) gives each its share: fraction(f) then means
  // from + f (to - from) of the whole.
  void span(double from, double to) {
    from_ = from;
    to_ = to;
  }
  void done() {
    if (on_) std::fprintf(out_, "\r\033[K");
  }
  // "[logpbench] 42% done, about 1 min 5 s left: STEP" (no estimate in the first second or 1%).
  std::string line() const {
    std::string s = "[logpbench] ";
    if (started_) {
      char b[32];
      std::snprintf(b, sizeof b, "%.0f%% done", std::floor(fraction_ * 100));
      s += b;
      const std::string left = time_left(elapsed_s_, fraction_);
      if (!left.empty()) s += ", " + left;
      s += ": ";
    }
    return s + step_;
  }
  // "about 1 min 5 s left" from the time spent so far and the fraction done; "" while too early to tell.
  static std::string time_left(double elapsed_s, double f) {
    if (!(f >= 0.01) || !(elapsed_s >= 1) || f >= 1) return "";
    const double left = elapsed_s * (1 - f) / f;
    char b[48];
    if (left < 60)
      std::snprintf(b, sizeof b, "about %.0f s left", std::ceil(left));
    else if (left < 3600)
      std::snprintf(b, sizeof b, "about %d min %d s left", static_cast<int>(left / 60), static_cast<int>(left) % 60);
    else
      std::snprintf(b, sizeof b, "about %d h %d min left", static_cast<int>(left / 3600),
                    static_cast<int>(left / 60) % 60);
    return b;
  }

 private:
  void draw() {
    if (!on_) return;
    if (started_) elapsed_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(out_, "\r\033[K%s", line().c_str());
    std::fflush(out_);
  }

  bool on_;
  std::FILE* out_;
  std::string step_;
  bool started_ = false;
  std::chrono::steady_clock::time_point start_;
  double fraction_ = 0, elapsed_s_ = 0;
  double from_ = 0, to_ = 1;
};

}  // namespace logpb::app
