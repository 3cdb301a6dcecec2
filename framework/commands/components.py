"""`exp list`, `exp explain`, `exp schema`: the commands that read the registry and the schema."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from framework.commands import EXIT_FAILED, EXIT_SPEC
from framework.errors import UsageError


def kind_named(name: str) -> str:
    """The kind (its key in registry.KINDS, e.g. `models`) named by its plural or singular name."""
    import registry

    for kind, reg in registry.KINDS.items():
        if name in (kind, reg.noun):
            return kind
    hint = registry.did_you_mean(name, registry.KINDS, otherwise=f" Kinds: {', '.join(registry.KINDS)}.")
    print(f"error: unknown kind '{name}'.{hint}", file=sys.stderr)
    raise SystemExit(EXIT_SPEC)  # a wrong name is a mistake in what was asked, as in `exp explain`


def cmd_list(args: argparse.Namespace) -> int:
    import registry

    kinds = [kind_named(args.kind)] if args.kind else list(registry.KINDS)
    if args.format == "json":
        import json

        print(json.dumps([{"kind": kind, "noun": registry.KINDS[kind].noun, "contract": registry.KINDS[kind].contract,
                           "components": [{"name": name, "target": registry.KINDS[kind].target(name),
                                           "origin": registry.KINDS[kind].origin_of(name)}
                                          for name in registry.KINDS[kind].names()]}
                          for kind in kinds], indent=1))
        return 0
    for kind in kinds:
        reg = registry.KINDS[kind]
        print(f"{kind}:  ({reg.contract})" if args.kind and reg.contract else f"{kind}:")
        for name in reg.names():
            print(f"  {name:28s} {reg.target(name):62s} from {reg.origin_of(name)}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """Arguments, defaults, docstring and file:line of a component, read from the committed schema
    and the source file: no component is imported (a plugin's entry missing from the committed
    schema is read from its live signature instead, which imports it)."""
    import registry
    from framework.schema import CommittedSchemas, LiveSchemas
    from framework.sources import locate

    if args.name == "claims":  # the claims file and its check language
        from framework.claims.expressions import language

        print(language())
        return 0
    prefix, _, name = args.name.rpartition(".") if "." in args.name else ("", "", args.name)
    kinds = [kind_named(prefix)] if prefix else [k for k, r in registry.KINDS.items() if name in r]
    if prefix and name not in registry.KINDS[kinds[0]]:
        reg = registry.KINDS[kinds[0]]
        hint = registry.did_you_mean(name, reg.names(), otherwise=f" Known {registry.plural(reg.noun)}: {', '.join(reg.names())}.")
        print(f"error: unknown {reg.noun} '{name}'.{hint}", file=sys.stderr)
        return EXIT_SPEC
    if not kinds:
        every = sorted({n for r in registry.KINDS.values() for n in r.names()})
        hint = registry.did_you_mean(name, every, otherwise=" See `exp list`.")
        print(f"error: no component named '{name}'.{hint}", file=sys.stderr)
        return EXIT_SPEC
    committed = CommittedSchemas()
    for kind in kinds:
        reg = registry.KINDS[kind]
        source = locate(reg.target(name))
        where = f"{source.file}:{source.line}" if source else "<unknown>"
        print(f"{reg.noun} '{name}'  ->  {reg.target(name)}  ({where}; from {reg.origin_of(name)})")
        if reg.runtime:
            print(f"  supplied at run time: {', '.join(reg.runtime)}")
        schema = None
        if reg.in_specs:
            schema = committed.defs.get(f"{kind}.{name}") or LiveSchemas().component(kind, name)
            _print_arguments(schema, _descriptions(committed, kind, name))
        doc = source.doc if source and source.doc else (schema or {}).get("description", "")
        print("\n" + "\n".join(f"  {line}" for line in _shown_doc(reg.target(name), doc).splitlines()))
        for base, names in (schema or {}).get("x-inherited", {}).items():  # taken through **kwargs
            base_source = locate(base)
            print(f"\n  {', '.join(names)}: from {base} (**kwargs)")
            print("\n".join(f"  {line}" for line in _shown_doc(base, base_source.doc if base_source else "").splitlines()))
        print()
    return 0


def _shown_doc(target: str, doc: str) -> str:
    """What `exp explain` shows of a docstring: ours without its `Args:` section (each argument
    is described in the list above); a third party's summary only (torch's and Lightning's run to
    pages of maths and notes), with where to read the rest."""
    from framework.sources import summary, without_arguments

    if target.startswith("components."):
        return without_arguments(doc)
    return f"{summary(doc)}\n(the full docstring: the source file above)" if doc else ""


def _descriptions(committed: Any, kind: str, name: str) -> dict[str, str]:
    """argument -> its description, from the editor's view of the committed schema (a plugin's
    component, missing there, from its live docstrings)."""
    from framework.schema import argument_descriptions

    editor = committed.defs.get(f"editor.{kind}.{name}")
    if editor is None:
        return argument_descriptions(kind, name)
    return {k: p["description"] for k, p in editor["properties"].items() if k != "type" and p.get("description")}


def _print_arguments(schema: dict, descriptions: dict[str, str]) -> None:
    import textwrap

    from framework.wording import describe

    print("  arguments:")
    for key, prop in schema["properties"].items():
        if key == "type":
            continue
        need = "required" if key in schema["required"] else f"default {prop.get('default', '<none>')!r}"
        print(f"    {key:26s} {describe({k: v for k, v in prop.items() if k != 'default'})}  [{need}]")
        if descriptions.get(key):
            print(textwrap.fill(descriptions[key], width=100, initial_indent=" " * 6, subsequent_indent=" " * 6))
    if schema.get("additionalProperties"):
        print("    (any other keyword: a **kwargs that cannot be followed into a base class)")


def cmd_schema(args: argparse.Namespace) -> int:
    """Without -o: the committed files (framework/spec.schema.json and one fragment per family
    package: framework/schema_files.py). With -o: the whole schema in one file, for an editor
    (with --plugins, installed plugins' components too)."""
    import json

    from framework import schema_files
    from framework.schema import build_schema

    if args.plugins and not args.output:
        raise UsageError("--plugins writes one whole file for an editor: name it with -o FILE "
                         "(the committed files hold this repository's components only)")
    whole = build_schema(plugins=args.plugins)
    if args.output:
        path, text = Path(args.output), json.dumps(whole, indent=1) + "\n"
        stale = [] if path.is_file() and path.read_text() == text else [path]
        if not args.check:
            path.write_text(text)
            print(f"wrote {path}")
            return 0
    elif args.check:
        stale = schema_files.stale(whole)
    else:
        written = schema_files.write(whole)
        print(f"wrote {written[0]} and {len(written) - 1} fragment(s)")
        return 0
    for path in stale:
        print(f"{path} is stale: run `exp schema` and commit it", file=sys.stderr)
    if stale:
        return EXIT_FAILED
    print("the committed schema is up to date")
    return 0
