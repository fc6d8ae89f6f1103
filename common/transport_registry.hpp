// The vocabulary of a transport's descriptor, and the list CMake generates of them
// (transports/all_transports.hpp, from every folder with a descriptor.hpp; docs/design.md §7).
//
// A transport lives in a top-level folder <name>/ whose CMakeLists.txt registers it (logpb_transport) and
// whose descriptor.hpp defines `struct logpb::<name>::Descriptor`:
//   static constexpr const char* name, summary;  // --transport NAME; its line in --help
//   using Options = ...;                         // its part of the command line (a base of app::Options)
//   static boost::program_options::options_description describe(Options&);  // its --help section
//   static void validate(Options&, const TransportCheck&);  // its checks (UsageError); an option of its own
//                                                // given with another --transport is refused here too
//   static void run(app::Job&);                  // connects every rank of the job and plays its role; defined
//                                                // in the folder's job library, built only where the
//                                                // transport's library is (kBuilt)
// Adding a transport adds a folder: nothing outside it names the transport.
#pragma once

#include <string>
#include <string_view>

#include <boost/program_options/variables_map.hpp>

namespace logpb {

template <class... D>
struct TransportList {};

// Whether the transport's job was built (its library found): set by the generated list.
template <class D>
inline constexpr bool kBuilt = false;

// What a transport's checks see of the rest of the command line.
struct TransportCheck {
  const boost::program_options::variables_map& vm;
  const std::string& transport;  // the chosen --transport
  const std::string& mode;       // local | server | client (launched is settled later)
  bool mode_given = false;       // the user named the mode
  int& window;                   // the AM window (an emulated NI's capacity sets it)
  bool small_ams_only = false;   // the method and size carry no bulk data (verbs' --ud needs it)
  bool batches_sends = false;    // the method measures a rate, so sends may reach the NI together
};

// Every transport's options in one struct: app::Options derives from it.
template <class L>
struct TransportOptions;
template <class... D>
struct TransportOptions<TransportList<D...>> : D::Options... {};

// Calls f.template operator()<D>() for the transport named `name`; false when there is none.
template <class F, class... D>
bool with_transport(std::string_view name, F&& f, TransportList<D...>) {
  return ((name == D::name ? (f.template operator()<D>(), true) : false) || ...);
}

// Calls f.template operator()<D>() for every transport, in the list's order.
template <class F, class... D>
void for_each_transport(F&& f, TransportList<D...>) {
  (f.template operator()<D>(), ...);
}

}  // namespace logpb
