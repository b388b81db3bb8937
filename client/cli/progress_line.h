// The CLI's progress line on a terminal: MiB sent, then, while the server works and nothing moves on the
// wire, the seconds it has taken so far ("server 1.8 s", updated every 200 ms), then MiB received. Without
// the middle part a 2 s sort showed a line frozen at its last "send" figure.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string_view>

namespace gpusort::cli {

// The callback for ClientOptions::progress, writing to `out` (stderr when it is a terminal; tests pass a
// file). The ticker's thread stops when the last copy of the callback goes (the Client that holds it).
std::function<void(std::string_view stage, std::size_t done, std::size_t total)> ProgressLineTo(std::FILE* out);

}  // namespace gpusort::cli
