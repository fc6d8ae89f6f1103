// The poll model's arithmetic (methods/poll/poll.hpp): the empty poll, the line time = a + b x frames
// through the timed polls, the frames a stream's polls hand up, and what the two receive costs the
// papers publish must then be.
//
// The relation. Kielmann et al. (section 3) time the receive of one message that has waited Delta > RTT:
// one poll that finds it and hands it up, so their o_r = a + b. Bell et al. (section 4.3) read o_r off a
// saturated stream as the time per message the computation cannot hide: each poll hands up f frames on
// average, so a message pays b and a share a / f of the poll, and o_r_stream = a / f + b (plus, where the
// receiver outruns the sender, e_empty x empty polls / frames; past the overlap test's knee the queue is
// never empty, so none). Hence
//     o_r(Kielmann) - o_r(Bell) = a (1 - 1/f) >= 0,
// equal only where a poll hands up one frame (f = 1: the shm ring, an NI polled one completion at a time).
// Both figures are right; they time different things, and this model is what parts them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/figures.hpp"

namespace logpb::methods::poll_fit {

// One timed poll: how many frames the peer was asked to send before it, how many it handed up, its time.
struct Sample {
  int asked = 0;
  int frames = 0;
  double ns = 0;
};

// The median time of the polls that handed up `frames` frames.
struct Point {
  int frames = 0;
  std::size_t n = 0;
  double median_ns = 0, ci95_ns = 0;
  double residual_ns = 0;  // the median less the line
};

struct Fit {
  analysis::Param fixed;      // a: the cost of a poll that finds something, less its frames
  analysis::Param per_frame;  // b: each frame it hands up (validation, dispatch, handler, copy, re-post)
  analysis::Param one_frame;  // the polls that handed up one frame, measured (a + b without the line)
  std::vector<Point> points;  // per frame count with at least min_samples polls
  int dof = 0;
  bool linear = true;  // every point within its interval (or 10%, or one clock step) of the line
  std::string linear_detail;
};

// Fits time = a + b x frames through the per-count medians (least squares, weighted by their intervals).
// Each coefficient's interval is the larger of the Student-t one from the scatter about the line (n - 2
// degrees of freedom) and the one the points' own intervals propagate through the fit, so neither a line
// through two points nor a perfect fit of noisy medians looks exact. With one frame count only (a transport that hands up
// one frame per poll) a and b cannot be parted: both are invalid with that reason, and one_frame holds
// their sum. resolution_ns: the clock's step, the least a single poll's time can move by.
Fit fit_poll(const std::vector<Sample>& samples, double resolution_ns, std::size_t min_samples = 8);

// The empty poll: the median of block means (each block times `block` polls that found nothing), its
// interval the order statistics' half-width floored at the clock step over the polls a span held.
analysis::Param empty_poll(const std::vector<double>& block_means, int block, double resolution_ns);

// The receive time per message in a stream, measured: per block of messages its mean period less its
// mean computation; the median over blocks, floored at one clock step over the messages a block held.
analysis::Param stream_receive(const std::vector<double>& block_period_ns, const std::vector<double>& block_compute_ns,
                               int block, double resolution_ns);

// What a stream's polls handed up: polls[n] = polls that handed up exactly n frames (n = 0: empty).
struct Stream {
  std::uint64_t polls = 0, empty = 0, frames = 0;
  double mean = 0;    // frames per poll that found something
  double median = 0;  // median of the same
  double empty_share_of_polls = 0;
};
Stream stream_of(const std::vector<std::uint64_t>& per_count);

// o_r per message in a stream whose polls hand up f frames each on average: a / f + b, its half-width
// by first-order propagation (f is counted, not estimated: exact).
analysis::Param stream_prediction(const analysis::Param& a, const analysis::Param& b, double f);
// Kielmann's o_r, one waiting message: a + b (their intervals in quadrature), or the measured one-frame
// poll where a and b cannot be parted.
analysis::Param single_prediction(const Fit& fit);

// The most frames one poll of this transport may hand up, from its describe(): the emulated NI's
// rx_batch, a CQ's cq_batch (verbs, ofi), an rx burst (DPDK, MPI's ring); 1 for the shm ring, which
// hands up one frame per poll. `source` says which.
int receive_batch(const nlohmann::json& describe, std::string& source);

// The frame counts a run asks for: 1, 2, 4, ... below the batch, and the batch itself; at most `cap`.
std::vector<int> frame_counts(int batch, int cap);

}  // namespace logpb::methods::poll_fit
