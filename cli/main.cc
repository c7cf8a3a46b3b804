// ccltune: the command-line tool (cli/cli.hpp).
#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) { return ccltune::cli::Run(argc, argv, std::cout, std::cerr); }
