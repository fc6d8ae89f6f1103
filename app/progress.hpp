// A one-line progress display on a terminal (stderr); silent when stderr is not a terminal or --quiet.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

namespace logpb::app {

class Progress {
 public:
  explicit Progress(bool quiet) : on_(!quiet && isatty(STDERR_FILENO)) {}
  void operator()(const std::string& s) {
    if (on_) std::fprintf(stderr, "\r\033[K[logpbench] %s", s.c_str());
  }
  void done() {
    if (on_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool on_;
};

}  // namespace logpb::app
