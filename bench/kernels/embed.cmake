# Writes the bytes of IN as a C++ array into OUT: `extern const unsigned char NAME[]` and
# `extern const size_t NAME_size`, 16-byte aligned as cuModuleLoadData wants a fatbin image.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
     "// Generated from ${IN} by embed.cmake: do not edit.\n#include <cstddef>\n"
     "extern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_size;\n"
     "alignas(16) const unsigned char ${NAME}[] = {\n${bytes}\n};\nconst size_t ${NAME}_size = ${size};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
