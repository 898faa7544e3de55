// SPDX-License-Identifier: MIT
// Errors that stop the program: bad user input. Everything environmental is a fact instead.
#pragma once

#include <stdexcept>
#include <string>

namespace halo {

/// Bad input from the user: a rules file, a facts file, a policy or a command-line value.
/// The message names the file and, where known, the line. Maps to exit code 2.
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An output that could not be written (a full disk, an I/O error, a closed stdout): the message
/// names the file and the reason. Maps to exit code 70; no partial file is left behind.
class OutputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Converts a byte offset in `text` into a 1-based line number (for error messages).
std::size_t line_of_offset(std::string_view text, std::size_t offset);

} // namespace halo
