// PLACEHOLDER until the CLI lands (owner: CLI helper). Replace wholesale.
int main() { return 2; }
