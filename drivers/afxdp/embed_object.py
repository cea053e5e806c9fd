#!/usr/bin/env python3
"""Build step: turns a compiled BPF object into a C++ header holding its bytes,
so the program ships inside the binary (no path to find at run time)."""
import sys

src, dst, name = sys.argv[1:4]
data = open(src, "rb").read()
with open(dst, "w") as f:
    f.write("// Generated from %s by embed_object.py. Do not edit.\n#pragma once\n#include <cstddef>\n" % src.split("/")[-1])
    f.write("inline constexpr unsigned char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        f.write("  " + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    f.write("};\ninline constexpr std::size_t %s_size = sizeof(%s);\n" % (name, name))
