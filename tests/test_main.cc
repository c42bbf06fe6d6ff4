// Every test binary's main: Catch2's, with the debug checks of the code
// under test turned on (DCHECK, common/log/log.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "common/log/log.h"

int main(int argc, char** argv) {
  weft::log::SetDebugChecks(true);
  return Catch::Session().run(argc, argv);
}
