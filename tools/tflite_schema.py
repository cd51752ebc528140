"""Writes the TFLite (LiteRT) flatbuffers schema that rml's TFLite converter is
generated from, recovered from the schema module the pinned interpreter package
ships, and runs Debian's flatc on it.

No package on PyPI or in Debian ships TFLite's `schema.fbs` itself; the
interpreter package (ai-edge-litert, pinned in requirements-test.txt) ships
`schema_py_generated.py`, which flatc generated from that schema with its object
API. That module holds everything the binary format depends on: every table with
its number of field slots, each field's slot, scalar width and default (the
`<Table>Add<Field>` builders), what each offset field points to (the readers and
the object API's `# type:` comments), every enum and union with its values, and
the file identifier. This tool writes those facts back as a schema, so the bytes
rml's converter builds are laid out by the interpreter's own schema.

What the Python module does not keep, and how it is written here: field and enum
names are the readers' CamelCase names in snake_case (flatc's C++ names come from
them, the bytes do not); fields that hold an enum are plain integers of the same
width (the enums are declared beside them for their names and values); enums are
declared as `int` (a field's width is its own); `Buffer.data` keeps the official
schema's `force_align: 16`, which the Python generator drops.

The C++ builders and Verifier (include/rml/emit/tflite/schema_generated.h) are
flatc's output for the part of the schema the converter builds
(third_party/tflite/schema_converter.fbs: the option tables it creates, at their
union values in the full schema), not for all of it: flatc's C++ for the whole
schema is 13.9k lines (516 KB) that every translation unit including rml/rml.hpp
compiled. The `CreateXDirect` helpers flatc adds are dropped (the converter does
not call them). The full schema stays in third_party/tflite/schema.fbs (for `flatc
--json` on any .tflite file).

usage:
    python tools/tflite_schema.py            # rewrite third_party/tflite/schema.fbs,
                                             # third_party/tflite/schema_converter.fbs
                                             # and include/rml/emit/tflite/schema_generated.h
    python tools/tflite_schema.py --check    # fail if any differs from what would be written
"""
from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "third_party", "tflite", "schema.fbs")
CONVERTER_SCHEMA = os.path.join(ROOT, "third_party", "tflite", "schema_converter.fbs")
HEADER = os.path.join(ROOT, "include", "rml", "emit", "tflite", "schema_generated.h")
PACKAGE = "ai-edge-litert"

# flatbuffers' builder slot kinds and the schema scalar each one writes.
SLOT_SCALARS = {
    "Bool": "bool", "Int8": "byte", "Uint8": "ubyte", "Int16": "short", "Uint16": "ushort",
    "Int32": "int", "Uint32": "uint", "Int64": "long", "Uint64": "ulong",
    "Float32": "float", "Float64": "double",
}
# The reader's number-type flags and the schema scalar they read.
FLAG_SCALARS = {
    "Bool": "bool", "Int8": "byte", "Uint8": "ubyte", "Int16": "short", "Uint16": "ushort",
    "Int32": "int", "Uint32": "uint", "Int64": "long", "Uint64": "ulong",
    "Float32": "float", "Float64": "double",
}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class Recovered:
    """The schema's declarations read from the generated module's source and objects."""

    def __init__(self, module):
        self.module = module
        self.source = inspect.getsource(module)
        self.tables = {}  # name -> (slot count, {slot: (field name, fbs type, default)})
        self.enums = {}  # name -> [(member, value)]
        self.unions = {}  # name -> [(member table, value)]
        self.identifier = None
        self._read_tables()
        self._read_enums_and_unions()
        self._read_identifier()

    def _class_source(self, name: str) -> str:
        match = re.search(rf"^class {name}\(object\):\n(.*?)(?=^\S)", self.source, re.S | re.M)
        if not match:
            raise SystemExit(f"tflite_schema: no class {name} in the generated module")
        return match.group(1)

    def _read_tables(self):
        for table, slots in re.findall(r"^def (\w+)Start\(builder\):\n\s+builder\.StartObject\((\d+)\)",
                                       self.source, re.M):
            self.tables[table] = (int(slots), {})
        for table, (_, fields) in self.tables.items():
            body = self._class_source(table)
            types = self._object_api_types(table)
            for camel, param, kind, slot, default in re.findall(
                    rf"^def {table}Add(\w+)\(builder, (\w+)\):\n\s+builder\.Prepend(\w+)Slot\((\d+), .*?, ([^,\n]+)\)\n",
                    self.source, re.M):
                slot = int(slot)
                if kind in SLOT_SCALARS:
                    fields[slot] = (snake(camel), SLOT_SCALARS[kind], self._default(default, kind))
                elif kind == "UOffsetTRelative":
                    fields[slot] = (snake(camel), self._offset_type(table, camel, body, types.get(param)), None)
                else:
                    raise SystemExit(f"tflite_schema: {table}.{camel}: slot kind {kind} is not handled")
            # A union is two slots: its type (ubyte) then its value; the schema declares one field.
            for slot, (name, kind, _) in list(fields.items()):
                if kind.startswith("union "):
                    type_slot = fields.get(slot - 1)
                    if not type_slot or type_slot[0] != name + "_type" or type_slot[1] != "ubyte":
                        raise SystemExit(f"tflite_schema: {table}.{name}: union without its type slot")
                    fields[slot - 1] = None

    def _object_api_types(self, table: str) -> dict:
        match = re.search(rf"^class {table}T\(object\):\n(.*?)(?=^\S)", self.source, re.S | re.M)
        if not match:
            return {}
        return dict(re.findall(r"self\.(\w+) = \w+  # type: (.*)", match.group(1)))

    @staticmethod
    def _default(text: str, kind: str):
        text = text.strip()
        if text == "None":
            return "null"
        if kind == "Bool":
            return "true" if text in ("1", "True") else "false"
        return text

    def _offset_type(self, table: str, camel: str, body: str, annotation: str | None) -> str:
        if annotation and annotation.startswith("Union["):
            members = set(re.findall(r"'(\w+)T'", annotation))
            return "union " + self._union_named(members, f"{table}.{camel}")
        vector = re.search(rf"    def {camel}\(self, j\):\n(.*?)(?=\n    #|\n    def |\Z)", body, re.S)
        if vector:
            code = vector.group(1)
            if flag := re.search(r"Get\(flatbuffers\.number_types\.(\w+)Flags", code):
                return f"[{FLAG_SCALARS[flag.group(1)]}]"
            if element := re.search(r"obj = (\w+)\(\)", code):
                return f"[{element.group(1)}]"
            if ".String(" in code:
                return "[string]"
            raise SystemExit(f"tflite_schema: {table}.{camel}: vector of an unknown element")
        single = re.search(rf"    def {camel}\(self\):\n(.*?)(?=\n    #|\n    def |\Z)", body, re.S)
        if not single:
            raise SystemExit(f"tflite_schema: {table}.{camel}: no reader")
        code = single.group(1)
        if ".String(" in code:
            return "string"
        if element := re.search(r"obj = (\w+)\(\)", code):
            return element.group(1)
        raise SystemExit(f"tflite_schema: {table}.{camel}: unknown offset type")

    def _read_enums_and_unions(self):
        tables = set(self.tables)
        for name, cls in vars(self.module).items():
            if not inspect.isclass(cls) or name in tables or name.endswith("T") and name[:-1] in tables:
                continue
            members = [(k, v) for k, v in vars(cls).items() if not k.startswith("_")]
            if not members or not all(isinstance(v, int) for _, v in members):
                continue
            members.sort(key=lambda kv: kv[1])
            if members[0] == ("NONE", 0) and len(members) > 1 and all(k in tables for k, _ in members[1:]):
                self.unions[name] = members[1:]
            else:
                self.enums[name] = members

    def _union_named(self, members: set, where: str) -> str:
        # Called while tables are read, before _read_enums_and_unions: look the union up directly.
        for name, cls in vars(self.module).items():
            if not inspect.isclass(cls):
                continue
            values = {k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}
            if "NONE" in values and values - {"NONE"} == members:
                return name
        raise SystemExit(f"tflite_schema: {where}: no union has members {sorted(members)[:3]}...")

    def _read_identifier(self):
        found = set(re.findall(r'BufferHasIdentifier\(buf, offset, b"((?:\\x[0-9A-F]{2}){4})"', self.source))
        if len(found) != 1:
            raise SystemExit("tflite_schema: no single file identifier in the generated module")
        self.identifier = bytes(int(h, 16) for h in re.findall(r"\\x([0-9A-F]{2})", found.pop())).decode()

    def root_table(self) -> str:
        # The root is the one table no other table refers to.
        referenced = set()
        for _, fields in self.tables.values():
            for field in fields.values():
                if field:
                    referenced.update(re.findall(r"\w+", field[1]))
        for members in self.unions.values():
            referenced.update(member for member, _ in members)
        roots = [t for t in self.tables if t not in referenced]
        if len(roots) != 1:
            raise SystemExit(f"tflite_schema: no single root table: {roots}")
        return roots[0]


def schema_text(recovered, version: str, note: tuple[str, ...] = ()) -> str:
    out = [*note,
        f"// The TFLite (LiteRT) schema, recovered by tools/tflite_schema.py from",
        f"// ai_edge_litert/schema_py_generated.py of the {PACKAGE} {version} package (flatc's",
        "// Python output of TensorFlow's tensorflow/compiler/mlir/lite/schema/schema.fbs).",
        "// Generated: do not edit; run the tool.",
        "//",
        "// Copyright The TensorFlow Authors. Licensed under the Apache License, Version 2.0",
        "// (the package's licence; third_party/tflite/LICENSE). You may not use this file",
        "// except in compliance with the License. Distributed on an \"AS IS\" BASIS, WITHOUT",
        "// WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.",
        "",
        "namespace tflite;",
        "",
    ]
    for name, members in sorted(recovered.enums.items()):
        out.append(f"enum {name} : int {{")
        out += [f"  {member} = {value}," for member, value in members]
        out += ["}", ""]
    for name, members in sorted(recovered.unions.items()):
        out.append(f"union {name} {{")
        out += [f"  {member} = {value}," for member, value in members]
        out += ["}", ""]
    for table, (slots, fields) in sorted(recovered.tables.items()):
        out.append(f"table {table} {{")
        for slot in range(slots):
            if slot not in fields:
                out.append(f"  deprecated_{slot}:ubyte (deprecated);")
                continue
            field = fields[slot]
            if field is None:  # a union's type slot: declared by the union field after it
                continue
            name, kind, default = field
            kind = kind.removeprefix("union ")
            attributes = " (force_align: 16)" if (table, name) == ("Buffer", "data") else ""
            value = "" if default is None or default in ("0", "0.0", "false") else f" = {default}"
            out.append(f"  {name}:{kind}{value}{attributes};")
        out += ["}", ""]
    out += [f"root_type {recovered.root_table()};", f'file_identifier "{recovered.identifier}";',
            'file_extension "tflite";', ""]
    return "\n".join(out)


# The converter's sources: the option tables they build are the union members the
# C++ header keeps.
CONVERTER_SOURCES = [os.path.join(ROOT, "include", "rml", "emit", "tflite", name)
                     for name in ("context.hpp", "lowerings.hpp", "tflite.hpp")]
OPTION_UNIONS = ("BuiltinOptions", "BuiltinOptions2")


class Subset:
    """The part of a recovered schema rml's converter builds: every table reachable
    from the root, where the operator-options unions keep only the option tables the
    converter creates, at their own union values (so the bytes are the full schema's).
    flatc's C++ for the whole schema is 13.9k lines; for this, a fraction."""

    def __init__(self, full: Recovered, used: set[str]):
        self.enums, self.identifier, self._root = full.enums, full.identifier, full.root_table()
        self.unions = {name: [(m, v) for m, v in members if name not in OPTION_UNIONS or m in used]
                       for name, members in full.unions.items()}
        self.tables, pending = {}, [self._root]
        while pending:
            table = pending.pop()
            if table in self.tables:
                continue
            self.tables[table] = full.tables[table]
            for field in filter(None, full.tables[table][1].values()):
                for word in re.findall(r"\w+", field[1]):
                    if word in full.tables:
                        pending.append(word)
                    elif word in self.unions:
                        pending += [m for m, _ in self.unions[word]]

    def root_table(self) -> str:
        return self._root


def used_option_tables() -> set[str]:
    """The tables the converter creates (`tflite::CreateXOptions(...)`)."""
    text = "".join(open(path).read() for path in CONVERTER_SOURCES)
    return set(re.findall(r"tflite::Create(\w+Options)\b", text))


def generated_header(schema: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "schema.fbs")
        with open(path, "w") as f:
            f.write(schema)
        subprocess.run(["flatc", "--cpp", "--scoped-enums", "-o", folder, path], check=True)
        with open(os.path.join(folder, "schema_generated.h")) as f:
            return without_direct_builders(f.read())


def without_direct_builders(header: str) -> str:
    """flatc's C++ less its `CreateXDirect` helpers (tables from std::vector and
    const char* arguments): the converter builds its vectors itself and never calls
    them, and they were 13.5 KB of the 1 MB single header."""
    direct = re.compile(r"\ninline flatbuffers::Offset<\w+> Create\w+Direct\(.*?\n}\n", re.S)
    return direct.sub("", header)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = parser.parse_args()
    from ai_edge_litert import schema_py_generated  # the pinned interpreter package

    version = importlib.metadata.version(PACKAGE)
    recovered = Recovered(schema_py_generated)
    schema = schema_text(recovered, version)
    converter_schema = schema_text(Subset(recovered, used_option_tables()), version, (
        "// The part of schema.fbs that rml's TFLite converter builds (tools/tflite_schema.py's",
        "// Subset): the operator-options unions keep the option tables the converter creates, at",
        "// their values in the full schema; include/rml/emit/tflite/schema_generated.h is flatc's",
        "// C++ for this file.", "//"))
    header = generated_header(converter_schema)
    status = 0
    for path, text in ((SCHEMA, schema), (CONVERTER_SCHEMA, converter_schema), (HEADER, header)):
        if args.check:
            current = open(path).read() if os.path.exists(path) else None
            if current != text:
                print(f"tflite_schema: {os.path.relpath(path, ROOT)} differs from what the tool writes "
                      f"(run python tools/tflite_schema.py)", file=sys.stderr)
                status = 1
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {os.path.relpath(path, ROOT)} ({text.count(chr(10))} lines)")
    return status


if __name__ == "__main__":
    sys.exit(main())
