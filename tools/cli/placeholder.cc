// PLACEHOLDER so the CLI library has a source; the CLI helper removes it.
namespace replaygate::cli {
int placeholder() { return 0; }
}  // namespace replaygate::cli
