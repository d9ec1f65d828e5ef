// Entry point of the `replaygate` command; everything happens in replaygate::cli::run().
#include "tools/cli/commands.h"

int main(int argc, char** argv) { return replaygate::cli::run(argc, argv); }
