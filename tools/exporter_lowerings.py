"""Static analysis of the exporters in python/rml/: which rml ops, with which
attribute names, their lowerings hand to the Builder.

Nothing is imported or run: the source is read with `ast`, so no framework is
needed. An op name reaches the Builder as the first argument of a `.op(...)` or
`.op_multi(...)` call (the Builder's own methods and the exporters' `Lowering.op`
wrappers alike). It may be written there, or arrive through a parameter (wrappers
such as `Lowering.binary` and `nchw_op`, factories such as `_reduction("reduce_sum")`,
lambdas called on a loop variable), a loop over a table (`for _prim, _name in
UNARY.items()`) or a lookup in one (`COMPARE[...]`, `REDUCERS[r][0]`). The evaluator
follows each back to its string literal, trying every call site, loop item and table
entry; attribute names likewise back to dict keys (dict literals, `dict(k=...)`,
`{**attrs, ...}`, and `attrs["k"] = ...` stores in the same function, dropped under a
false `if name == "op":`).

What it cannot follow is reported, not skipped: an op name or attribute key that is not
a string literal reached that way (formatted or concatenated strings, a value read from
the framework's graph, a method's return value, a parameter of a function that is only
called through a table), an attribute dict it cannot see into. What it does not see at
all: Builder calls spelt other than `.op(`/`.op_multi(` (`getattr(b, "op")`, an alias),
and dict mutations other than `d[key] = value` in the function that made `d`
(`d.update(...)`, `d |= ...`, stores elsewhere). An op name that is None is skipped: the
code guards such paths (a REDUCERS entry with no reduction). Call sites of a method are
found by its name, in its module and those importing from it, so they may be too many,
never too few.
"""
from __future__ import annotations

import ast
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "python" / "rml"

# Builder methods: (position of the op name, position of the attribute dict).
SINKS = {"op": (0, 2), "op_multi": (0, 3)}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPES = FUNCTIONS + (ast.ClassDef, ast.Module)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FACTS = "facts"  # env key: {source text of an expression: its known value}


@dataclass(frozen=True, order=True)
class Origin:
    path: str
    line: int

    def __str__(self):
        return f"{self.path}:{self.line}"


@dataclass
class Use:
    """One rml op named in the source, with the attribute names passed with it."""
    op: str
    origin: Origin
    attributes: dict[str, Origin] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class Unresolved:
    origin: Origin
    reason: str

    def __str__(self):
        return f"{self.origin}: {self.reason}"


# --- values ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Lazy:
    """An expression evaluated only when something reads it."""
    node: ast.AST
    source: "Source"


@dataclass(frozen=True)
class Known:
    value: object
    origin: Origin


@dataclass(frozen=True)
class Opaque:
    node: ast.AST

    def __str__(self):
        return ast.unparse(self.node)


@dataclass(frozen=True)
class Seq:
    elements: tuple  # Lazy or values


@dataclass(frozen=True)
class Entry:
    key: object      # Lazy, a value, or None for `**spread`
    value: Lazy
    guards: tuple = ()  # (test, source, polarity): the `if`s a store sits under


@dataclass(frozen=True)
class Table:
    entries: tuple


@dataclass(frozen=True)
class Items:
    table: Table
    part: str  # items, keys or values


@dataclass(frozen=True, eq=False)
class Function:
    node: ast.AST
    source: "Source"
    closure: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CallSite:
    call: ast.Call
    source: "Source"


class Choice(Exception):
    """Evaluation needs one of several alternatives (a call site, loop item, entry)."""

    def __init__(self, key, options):
        super().__init__(key)
        self.key, self.options = key, list(options)


class Unresolvable(Exception):
    """A value the analysis cannot follow; `origin` is where it enters, when known."""

    def __init__(self, reason: str, origin: Origin | None = None):
        super().__init__(reason)
        self.reason, self.origin = reason, origin


# --- sources ----------------------------------------------------------------------------
class Source:
    """One parsed module, with parent links for scope lookups."""

    def __init__(self, rel: str, text: str):
        self.rel = rel
        self.tree = ast.parse(text, filename=rel)
        self.parents = {child: node for node in ast.walk(self.tree) for child in ast.iter_child_nodes(node)}

    def origin(self, node) -> Origin:
        return Origin(self.rel, node.lineno)

    def enclosing(self, node, kinds):
        node = self.parents.get(node)
        while node is not None and not isinstance(node, kinds):
            node = self.parents.get(node)
        return node

    def inside(self, node, ancestor) -> bool:
        while node is not None:
            if node is ancestor:
                return True
            node = self.parents.get(node)
        return False


def scope_nodes(scope) -> Iterator[ast.AST]:
    """The nodes of a scope's own body, not those of scopes nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES + COMPREHENSIONS):
            stack.extend(ast.iter_child_nodes(node))


def target_paths(target, path=()) -> Iterator[tuple[str, tuple]]:
    """(name, index path) for each name an assignment or loop target binds."""
    if isinstance(target, ast.Name):
        yield target.id, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for i, element in enumerate(target.elts):
            yield from target_paths(element, path + (i,))


def parameters(function) -> list[str]:
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def is_sink(call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr in SINKS and bool(call.args)


def sink_arguments(call) -> tuple:
    """(op name expression, attribute dict expression or None) of a Builder call."""
    name_at, attrs_at = SINKS[call.func.attr]
    keywords = {k.arg: k.value for k in call.keywords}
    name = call.args[name_at] if len(call.args) > name_at else keywords.get("name")
    attrs = call.args[attrs_at] if len(call.args) > attrs_at else keywords.get("attrs")
    return name, attrs


def describe(value) -> str:
    if isinstance(value, Known):
        return repr(value.value)
    if isinstance(value, Opaque):
        return f"`{value}`"
    return type(value).__name__.lower()


class Analysis:
    """The evaluator over a set of modules (keyed by path relative to the repository)."""

    def __init__(self, texts: dict[str, str]):
        self.sources = {rel: Source(rel, text) for rel, text in texts.items()}
        self._bindings: dict = {}
        self._call_sites = self._index_calls()

    @classmethod
    def of_package(cls, package: Path = PACKAGE, root: Path = REPO) -> "Analysis":
        """Every module under `package`, recursively."""
        return cls({p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
                    for p in sorted(package.rglob("*.py"))})

    # --- name lookup ----------------------------------------------------------------
    def scope_bindings(self, scope) -> dict[str, list]:
        if scope not in self._bindings:
            bound: dict[str, list] = {}
            for node in scope_nodes(scope):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    for target in getattr(node, "targets", None) or [node.target]:
                        for name, path in target_paths(target):
                            bound.setdefault(name, []).append(("assign", node, path))
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.setdefault(node.name, []).append(("def", node, ()))
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        bound.setdefault((alias.asname or alias.name).split(".")[0], []).append(("import", node, alias))
                elif isinstance(node, ast.For):
                    for name, path in target_paths(node.target):
                        bound.setdefault(name, []).append(("loop", node, path))
            self._bindings[scope] = bound
        return self._bindings[scope]

    def lookup(self, name: str, ref, source: Source) -> list:
        """The bindings `name` may refer to at `ref`, innermost scope first."""
        node = ref
        while True:
            scope = source.enclosing(node, SCOPES + COMPREHENSIONS)
            if scope is None:
                return []
            if isinstance(scope, COMPREHENSIONS):
                if any(name in dict(target_paths(g.target)) for g in scope.generators):
                    return [("comprehension", scope, ())]
            elif isinstance(scope, FUNCTIONS) and name in parameters(scope):
                return [("param", scope, ())]
            elif not isinstance(scope, ast.ClassDef) or node is ref:
                loop = self._enclosing_loop(name, ref, scope, source)
                if loop is not None:
                    return [loop]
                if name in self.scope_bindings(scope):
                    return self.scope_bindings(scope)[name]
            node = scope

    def _enclosing_loop(self, name, ref, scope, source):
        """The innermost `for` of `scope` whose body holds `ref` and whose target binds `name`."""
        child, node = ref, source.parents.get(ref)
        while node is not None and node is not scope:
            if isinstance(node, ast.For) and child in node.body:
                paths = dict(target_paths(node.target))
                if name in paths:
                    return ("loop", node, paths[name])
            child, node = node, source.parents.get(node)
        return None

    def module_binding(self, source: Source, name: str) -> list:
        return self.scope_bindings(source.tree).get(name, [])

    def imported_source(self, source: Source, node: ast.ImportFrom) -> Source | None:
        """The analysed module a relative `from .x import y` names."""
        if not node.level:
            return None
        base = posixpath.dirname(source.rel)
        for _ in range(node.level - 1):
            base = posixpath.dirname(base)
        stem = posixpath.join(base, *(node.module or "").split("."))
        return self.sources.get(stem + ".py") or self.sources.get(posixpath.join(stem, "__init__.py"))

    # --- call sites -------------------------------------------------------------------
    def _index_calls(self) -> dict:
        """Call sites per function node: by name for functions, by method name for methods
        (in the class's module and the modules importing from it), the call itself for lambdas."""
        by_function: dict = {}
        methods: dict = {}
        for source in self.sources.values():
            for call in (n for n in ast.walk(source.tree) if isinstance(n, ast.Call)):
                site = CallSite(call, source)
                if isinstance(call.func, ast.Lambda):
                    by_function.setdefault(call.func, []).append(site)
                elif isinstance(call.func, ast.Attribute):
                    methods.setdefault((source.rel, call.func.attr), []).append(site)
                elif isinstance(call.func, ast.Name):
                    for target in self.functions_named(call.func, source):
                        by_function.setdefault(target.node, []).append(site)
        for source in self.sources.values():
            for cls in (n for n in ast.walk(source.tree) if isinstance(n, ast.ClassDef)):
                for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    for rel in [source.rel] + self.importers(source):
                        by_function.setdefault(method, []).extend(methods.get((rel, method.name), []))
        return by_function

    def importers(self, source: Source) -> list[str]:
        return [other.rel for other in self.sources.values()
                if any(isinstance(n, ast.ImportFrom) and self.imported_source(other, n) is source
                       for n in ast.walk(other.tree))]

    def functions_named(self, name_node: ast.Name, source: Source) -> list[Function]:
        found = []
        for kind, node, detail in self.lookup(name_node.id, name_node, source):
            if kind == "def" and not isinstance(node, ast.ClassDef):
                found.append(Function(node, source))
            elif kind == "import" and isinstance(node, ast.ImportFrom):
                other = self.imported_source(source, node)
                if other is not None:
                    found += [Function(n, other) for k, n, _ in self.module_binding(other, detail.name)
                              if k == "def" and not isinstance(n, ast.ClassDef)]
        return found

    def call_sites(self, function, env) -> list[CallSite]:
        """Sites that may call `function`, leaving out those inside it or inside a function
        already bound (a call chain through them would be a cycle)."""
        sites = self._call_sites.get(function, [])
        bound = [function] + [key for key in env if isinstance(key, FUNCTIONS)]
        return [s for s in sites if not any(s.source.inside(s.call, f) for f in bound)]

    # --- evaluation -----------------------------------------------------------------------
    def value(self, node, source: Source, env: dict):
        if isinstance(node, ast.Constant):
            return Known(node.value, source.origin(node))
        if isinstance(node, ast.Name):
            return self._name(node, source, env)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, source, env)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, source, env)
        if isinstance(node, ast.Dict):
            return Table(tuple(Entry(None if k is None else Lazy(k, source), Lazy(v, source))
                               for k, v in zip(node.keys, node.values)))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return Seq(tuple(Lazy(e, source) for e in node.elts))
        if isinstance(node, ast.Call):
            return self._call(node, source, env)
        if isinstance(node, (ast.IfExp, ast.BoolOp)):
            if node not in env:
                branches = [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values
                raise Choice(node, [self.value(b, source, env) for b in branches])
            return env[node]
        if isinstance(node, ast.Lambda):
            return Function(node, source, dict(env))
        return Opaque(node)

    def resolve(self, item, env):
        return self.value(item.node, item.source, env) if isinstance(item, Lazy) else item

    def _name(self, node, source, env):
        bindings = self.lookup(node.id, node, source)
        if not bindings:
            return Opaque(node)
        if len(bindings) > 1:
            key = ("bindings", node.id) + tuple(id(b[1]) for b in bindings)
            if key not in env:
                raise Choice(key, [self._binding(b, node, source, env) for b in bindings])
            return env[key]
        return self._binding(bindings[0], node, source, env)

    def _binding(self, binding, ref, source, env):
        kind, node, detail = binding
        if kind == "param":
            return self._parameter(node, ref, source, env)
        if kind == "loop":
            if node not in env:
                raise Choice(node, self.iterate(self.value(node.iter, source, env), env))
            return self._element(env[node], detail, env)
        if kind == "assign":
            if detail:
                return self._element(self.value(node.value, source, env), detail, env)
            value = self.value(node.value, source, env)
            return self._with_stores(value, ref.id, node, source) if isinstance(node.value, ast.Dict) else value
        if kind == "def" and not isinstance(node, ast.ClassDef):
            # A nested def is a closure: it keeps the bindings of the call that made it.
            return Function(node, source, dict(env) if source.enclosing(node, FUNCTIONS) else {})
        if kind == "import" and isinstance(node, ast.ImportFrom):
            other = self.imported_source(source, node)
            found = self.module_binding(other, detail.name) if other else []
            if len(found) == 1:
                return self._binding(found[0], ref, other, env)
        return Opaque(ref)

    def _with_stores(self, table: Table, name: str, assignment, source) -> Table:
        """A dict assigned to `name`, with the `name[key] = value` stores of the same scope."""
        scope = source.enclosing(assignment, SCOPES)
        stores = []
        for node in scope_nodes(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                            and target.value.id == name):
                        stores.append(Entry(Lazy(target.slice, source), Lazy(node.value, source),
                                            self._guards(node, scope, source)))
        return Table(table.entries + tuple(stores))

    @staticmethod
    def _guards(node, scope, source) -> tuple:
        guards, child, parent = [], node, source.parents.get(node)
        while parent is not None and parent is not scope:
            if isinstance(parent, ast.If):
                guards.append((parent.test, source, child in parent.body))
            child, parent = parent, source.parents.get(parent)
        return tuple(guards)

    def _parameter(self, function, ref, source, env):
        name = ref.id
        if function not in env:
            if not self._call_sites.get(function):
                raise Unresolvable(f"`{name}` is a parameter of `{getattr(function, 'name', 'lambda')}`, "
                                   "whose callers cannot be seen", source.origin(ref))
            raise Choice(function, self.call_sites(function, env))
        site = env[function]
        args = function.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        call = site.call
        shift = 1 if self.is_method(function, source) else 0
        keywords = {k.arg: k.value for k in call.keywords}
        if name in keywords:
            return self.value(keywords[name], site.source, env)
        if name in positional:
            index = positional.index(name) - shift
            if any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
                return Opaque(call)
            if 0 <= index < len(call.args):
                return self.value(call.args[index], site.source, env)
            defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            if name in defaults:
                return self.value(defaults[name], source, env)
        if args.vararg is not None and name == args.vararg.arg:
            return Seq(tuple(Lazy(a, site.source) for a in call.args[len(positional) - shift:]))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if arg.arg == name and default is not None:
                return self.value(default, source, env)
        return Opaque(call)

    @staticmethod
    def is_method(function, source) -> bool:
        return (isinstance(source.parents.get(function), ast.ClassDef)
                and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list))

    def _attribute(self, node, source, env):
        facts = env.get(FACTS, {})
        if ast.unparse(node) in facts:
            return Known(facts[ast.unparse(node)], source.origin(node))
        return Opaque(node)

    def _subscript(self, node, source, env):
        container = self.value(node.value, source, env)
        try:
            key = self.value(node.slice, source, env)
        except Unresolvable:
            key = Opaque(node.slice)
        if isinstance(container, Seq) and isinstance(key, Known) and isinstance(key.value, int):
            return self.resolve(container.elements[key.value], env)
        if not isinstance(container, Table):
            return Opaque(node)
        entries = [e for e in container.entries if e.key is not None]
        if isinstance(key, Known):
            for entry in entries:
                found = self.resolve(entry.key, env)
                if isinstance(found, Known) and found.value == key.value:
                    return self.resolve(entry.value, env)
            return Opaque(node)
        if node not in env:  # a key known only at run time: any entry
            raise Choice(node, [self.resolve(e.value, env) for e in entries])
        return env[node]

    def _call(self, node, source, env):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "dict" and not self.lookup("dict", func, source):
            return Table(tuple(Entry(Known(k.arg, source.origin(k.value)), Lazy(k.value, source))
                               for k in node.keywords if k.arg is not None))
        if isinstance(func, ast.Attribute) and func.attr in ("items", "keys", "values"):
            table = self.value(func.value, source, env)
            return Items(table, func.attr) if isinstance(table, Table) else Opaque(node)
        callee = self.value(func, source, env)
        if not isinstance(callee, Function):
            return Opaque(node)
        inner = {**env, **callee.closure, callee.node: CallSite(node, source)}
        if isinstance(callee.node, ast.Lambda):
            return self.value(callee.node.body, callee.source, inner)
        returns = [n for n in scope_nodes(callee.node) if isinstance(n, ast.Return)]
        if not returns:
            return Known(None, source.origin(node))
        if len(returns) > 1:
            key = ("returns", node)
            if key not in inner:
                raise Choice(key, returns)
            returns = [inner[key]]
        return self.value(returns[0].value, callee.source, inner) if returns[0].value else Known(None, source.origin(node))

    def _element(self, value, path, env):
        for index in path:
            if not isinstance(value, Seq) or index >= len(value.elements):
                raise Unresolvable(f"cannot unpack {describe(value)}")
            value = self.resolve(value.elements[index], env)
        return value

    def iterate(self, value, env) -> list:
        """The items a `for` over `value` takes."""
        if isinstance(value, Seq):
            items = []
            for element in value.elements:
                if isinstance(element, Lazy) and isinstance(element.node, ast.Starred):
                    items += self.iterate(self.value(element.node.value, element.source, env), env)
                else:
                    items.append(self.resolve(element, env))
            return items
        if isinstance(value, Table):
            return self.iterate(Items(value, "keys"), env)
        if isinstance(value, Items):
            entries = [e for e in value.table.entries if e.key is not None]
            if value.part == "items":
                return [Seq((e.key, e.value)) for e in entries]
            return [self.resolve(e.key if value.part == "keys" else e.value, env) for e in entries]
        raise Unresolvable(f"cannot iterate over {describe(value)}")

    def outcomes(self, compute: Callable, env: dict | None = None) -> Iterator:
        """compute(env) for every combination of the alternatives it meets."""
        pending = [dict(env or {})]
        while pending:
            current = pending.pop()
            try:
                result = compute(current)
            except Choice as choice:
                pending += [{**current, choice.key: option} for option in reversed(choice.options)]
                continue
            yield result

    # --- attributes --------------------------------------------------------------------------
    def attribute_names(self, value, env) -> dict[str, Origin]:
        if isinstance(value, Known) and value.value is None:
            return {}
        if not isinstance(value, Table):
            raise Unresolvable(f"cannot tell which attributes {describe(value)} holds")
        names: dict[str, Origin] = {}
        for entry in value.entries:
            if not self._guards_hold(entry.guards, env):
                continue
            if entry.key is None:
                names.update(self.attribute_names(self.resolve(entry.value, env), env))
                continue
            key = self.resolve(entry.key, env)
            if not (isinstance(key, Known) and isinstance(key.value, str)):
                raise Unresolvable(f"cannot tell which attribute the key {describe(key)} names")
            names.setdefault(key.value, key.origin)
        return names

    def _guards_hold(self, guards, env) -> bool:
        """False only when an `if a == b` / `if a != b` around a store is known to fail."""
        for test, source, polarity in guards:
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                    and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
                continue
            try:
                left, right = self.value(test.left, source, env), self.value(test.comparators[0], source, env)
            except Unresolvable:
                continue
            if isinstance(left, Known) and isinstance(right, Known):
                holds = (left.value == right.value) == isinstance(test.ops[0], ast.Eq)
                if holds != polarity:
                    return False
        return True

    # --- the Builder calls ------------------------------------------------------------------------
    def sinks(self) -> Iterator[CallSite]:
        for source in self.sources.values():
            for node in ast.walk(source.tree):
                if isinstance(node, ast.Call) and is_sink(node):
                    yield CallSite(node, source)

    def sink_outcome(self, site: CallSite, env: dict):
        """A Use, an Unresolved, or None (a path passing None, which the code guards)."""
        name_node, attrs_node = sink_arguments(site.call)
        try:
            name = self.value(name_node, site.source, env)
            if isinstance(name, Known) and name.value is None:
                return None
            if not (isinstance(name, Known) and isinstance(name.value, str)):
                raise Unresolvable(f"cannot tell which rml op {describe(name)} names")
            attrs = {} if attrs_node is None else self.attribute_names(self.value(attrs_node, site.source, env), env)
            return Use(name.value, name.origin, attrs)
        except Unresolvable as e:
            return Unresolved(e.origin or site.source.origin(site.call), e.reason)

    def op_uses(self) -> tuple[list[Use], list[Unresolved]]:
        """Every rml op named in the modules (one Use per op and place it is written, with
        the attribute names passed with it anywhere), and what could not be resolved."""
        uses: dict = {}
        unresolved = set()
        for site in self.sinks():
            for outcome in self.outcomes(lambda env, site=site: self.sink_outcome(site, env)):
                if isinstance(outcome, Unresolved):
                    unresolved.add(outcome)
                elif outcome is not None:
                    use = uses.setdefault((outcome.op, outcome.origin), Use(outcome.op, outcome.origin))
                    for name, origin in outcome.attributes.items():
                        use.attributes.setdefault(name, origin)
        return sorted(uses.values(), key=lambda u: (u.origin, u.op)), sorted(unresolved)


def schema_problems(uses: list[Use], unresolved: list[Unresolved], schema: dict) -> list[str]:
    """One line per op or attribute name the registry (`rml.op_schema()`) lacks."""
    problems = [f"{u}; write the op name and attribute keys as literals or in a table" for u in unresolved]
    for use in uses:
        if use.op not in schema:
            problems.append(f"{use.origin}: rml op '{use.op}' is not in the op registry")
            continue
        for name, origin in sorted(use.attributes.items()):
            if name not in schema[use.op]["attributes"]:
                known = ", ".join(schema[use.op]["attributes"]) or "none"
                problems.append(f"{origin}: rml op '{use.op}' (named at {use.origin}) has no attribute "
                                f"'{name}' (its attributes: {known})")
    return problems
