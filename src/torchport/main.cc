#include <torchport/cli/cli.h>

int main(int argc, char** argv) { return torchport::cli::run(argc, argv); }
