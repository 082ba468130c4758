"""The NNRt C headers that `convert --emit c` writes (nnrt_onnx/csource/include, tools/gen_c_headers.py): generated
from the spec and fresh; in C99 the same names, values, sizes and struct layouts as the spec's own header compiled
as C++ (its `enum : int8_t` needs C++); every function they declare is implemented by the recording shim."""
from __future__ import annotations

import importlib.util
import re
import subprocess

import pytest
from support import REPO, shared_file

from nnrt_onnx import enums
from nnrt_onnx.csource.program import build_shim
from nnrt_onnx.csource.toolchain import STRICT_C99, host_toolchain, include_dir

TOOLCHAIN = host_toolchain()
needs_cc = pytest.mark.skipif(TOOLCHAIN is None, reason="no system C compiler (cc, gcc or clang)")
HEADERS = include_dir() / "neural_network_runtime"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_c_headers", REPO / "tools" / "gen_c_headers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_headers_are_generated_from_the_spec_and_fresh():
    shared = shared_file("spec", "neural_network_runtime_type.h").parent.parent
    shared_file("reference", "nnrt_c_api.md")
    for name, text in _generator().headers(shared).items():
        assert (HEADERS / name).read_text() == text, f"{name} is stale: python tools/gen_c_headers.py ../shared"


def _structs(header_text: str) -> dict[str, list[str]]:
    """{struct: [field names]} of the `typedef struct X { ... } X;` definitions of a header."""
    structs = {}
    for match in re.finditer(r"typedef struct (\w+) \{(.*?)\} \1;", header_text, re.S):
        body = re.sub(r"/\*.*?\*/", "", match.group(2), flags=re.S)
        structs[match.group(1)] = re.findall(r"(\w+)\s*;", body)
    return structs


def _probe(include: str, structs: dict[str, list[str]]) -> str:
    """A program printing every enum constant's value, every enum type's and struct's size and every field's
    offset (the same text from a C and a C++ compiler when the layouts agree)."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", f'#include "{include}"', "int main(void) {"]
    for name in enums.__all__:
        lines.append(f'    printf("sizeof {name} %lu\\n", (unsigned long)sizeof({name}));')
        for member in getattr(enums, name):
            lines.append(f'    printf("{member.name} %lld\\n", (long long){member.name});')
    for struct, fields in structs.items():
        lines.append(f'    printf("sizeof {struct} %lu\\n", (unsigned long)sizeof({struct}));')
        for field in fields:
            lines.append(f'    printf("{struct}.{field} %lu\\n", (unsigned long)offsetof({struct}, {field}));')
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def _run(command, cwd) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    return done.stdout


@needs_cc
def test_the_c99_type_header_has_the_spec_headers_values_sizes_and_layouts(tmp_path):
    if TOOLCHAIN.cxx is None:
        pytest.skip("no C++ compiler: the spec's header (enum : int8_t) compiles only as C++")
    spec = shared_file("spec", "neural_network_runtime_type.h")
    structs = _structs(spec.read_text())
    assert set(structs) == {"OH_NN_UInt32Array", "OH_NN_QuantParam", "OH_NN_Tensor", "OH_NN_Memory"}
    assert structs["OH_NN_Tensor"] == ["dataType", "dimensionCount", "dimensions", "quantParam", "type"]
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "neural_network_runtime_type.h").write_text(spec.read_text())
    (tmp_path / "probe_spec.cpp").write_text(_probe("neural_network_runtime_type.h", structs))
    (tmp_path / "probe_c99.c").write_text(_probe("neural_network_runtime/neural_network_runtime_type.h", structs))
    _run([*TOOLCHAIN.cxx, "-std=c++11", "-I", str(tmp_path / "spec"), "probe_spec.cpp", "-o", "probe_spec"], tmp_path)
    _run([*TOOLCHAIN.cc, *STRICT_C99, "-I", str(include_dir()), "probe_c99.c", "-o", "probe_c99"], tmp_path)
    from_spec, from_c99 = _run(["./probe_spec"], tmp_path), _run(["./probe_c99"], tmp_path)
    assert from_c99.splitlines() == from_spec.splitlines()
    assert "sizeof OH_NN_FuseType 1" in from_c99.splitlines()  # the spec's enum : int8_t


@needs_cc
def test_the_shim_implements_every_declared_function(tmp_path):
    """Every function of the two headers, its address taken from a strict C99 program linked with the shim only:
    a function the shim lacks fails the link, one with another signature fails the compile."""
    declared = []
    for header in ("neural_network_core.h", "neural_network_runtime.h"):
        declared += re.findall(r"\b(OH_NN\w+)\(", (HEADERS / header).read_text())
    assert len(declared) == len(set(declared)) == 75  # the API's 75 functions (reference/nnrt_c_api.md)
    lines = ['#include "neural_network_runtime/neural_network_runtime.h"', "#include <stdio.h>",
             "int main(void) {", "    void (*functions[])(void) = {"]
    lines += [f"        (void (*)(void)){name}," for name in declared]
    lines += ["    };", '    printf("%lu\\n", (unsigned long)(sizeof functions / sizeof functions[0]));',
              "    return 0;", "}", ""]
    (tmp_path / "all.c").write_text("\n".join(lines))
    shim = build_shim(tmp_path / "shim.o", TOOLCHAIN)
    executable = TOOLCHAIN.build([tmp_path / "all.c"], tmp_path / "all", [include_dir()],
                                 [f for f in STRICT_C99 if f != "-pedantic"], [shim])  # (ISO C: no object <-> function pointer casts)
    assert _run([str(executable)], tmp_path).strip() == "75"
