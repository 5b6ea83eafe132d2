// The tiny demo model: what `gemlet chat` and `gemlet run` use when no -m is given, so the
// README's first command works on a fresh machine. It is the `synth --preset tiny` checkpoint
// (random weights, seed 0) converted with the default plan, made once and cached at
// $XDG_CACHE_HOME/gemlet/demo-tiny.gemlet (default ~/.cache/gemlet).
#pragma once

#include <cstdio>
#include <string>

#include "base/status.h"

namespace gemlet::cli {

// $XDG_CACHE_HOME/gemlet, else $HOME/.cache/gemlet (not created here). An error if neither
// variable is set.
Result<std::string> CacheDir();

// The cached demo model's path, making it first if it is missing. Making it writes into a
// temporary file beside the final one and renames it, so concurrent callers and interrupted
// runs never leave a partial file behind.
Result<std::string> EnsureDemoModel();

// The banner printed when the demo model is used: the weights are random and how to convert
// a real checkpoint.
void PrintDemoBanner(std::FILE* out, const std::string& path);

}  // namespace gemlet::cli
