// MLX's CUDA headers include <fmt/format.h> for one error message in LRUCache::emplace, a template
// this extension never instantiates; the mlx wheel does not ship fmt. Declaring fmt::format is
// enough for those headers to parse. Were the template ever instantiated, the link would fail on
// the undefined fmt::format, loudly, rather than run anything.
#pragma once

#include <string>

namespace fmt {
template <typename... Args>
std::string format(Args&&... args);
} // namespace fmt
