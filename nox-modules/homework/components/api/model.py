"""Declared shapes of the ws.v1 API: request and response models as plain Python classes,
read by three things: the request path (a body or query string is parsed into a model, or
refused with a 400 that names the field), the OpenAPI generator (openapi.py turns every
model into a schema) and the tests (every answer is checked against its declared shape).

Why not pydantic: the image installs only Debian packages, and bookworm's python3-pydantic
is 1.10 built without its compiled core, which is several times slower per request than
this module (docs/api.md has the figures), converts "1" to 1 where the API has always
refused it, and writes JSON Schema of its own flavour that would still need rewriting
into OpenAPI 3.0. What is needed here is small: typed fields, required or optional,
nullable, bounds, a validator per value, and a schema.

    class Pause(Model):
        '''How long to pause a device.'''
        minutes: int = field(60, minimum=1, maximum=10080, doc="minutes from now")

    Pause.parse({"minutes": 30}).minutes == 30
    Pause.parse({"minutes": "30"})        # Invalid("minutes must be a whole number")

A type is: str, int, float, bool, Any, None, a Model, list[T], dict[str, T], T | U,
Literal[...], or Annotated[T, field(...)] for a constrained value used in many places
(a MAC, a domain). Field values that are not given are `default`, or absent with
`optional=True` (a response field present only when a component is loaded).
"""
from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass, replace
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Union

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING", "__bool__": lambda self: False})()


class Invalid(ValueError):
    """A value does not fit its declared shape; the message names where and why."""


@dataclass(frozen=True)
class Field:
    default: Any = MISSING
    doc: str = ""
    optional: bool = False          # may be left out (requests: then `default`; answers: absent)
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    check: Callable[[Any], Any] | None = None   # the value's one validator: returns it (normalised) or raises
    #                                             ValueError
    example: Any = MISSING
    words: str = ""                 # how the value is described in an error ("a MAC address")
    secret: bool = False            # never shown back in an error; writeOnly in the document
    key: str = ""                   # the JSON name, where it is no Python name ("from", "class")
    enforce: bool = True            # False: the bounds document what the value's own validator (a command's) checks

    @property
    def required(self) -> bool:
        return self.default is MISSING and not self.optional


def field(default: Any = MISSING, **kw) -> Any:
    """A field's constraints and documentation (typed Any so `x: int = field(...)` reads well)."""
    return Field(default, **kw)


class Model:
    """Base of every declared shape. Subclasses list fields as annotations; the class
    docstring is the schema's description. `extra`: what a request may carry besides the
    declared fields ("forbid": 400 naming them; "ignore")."""
    extra: ClassVar[str] = "forbid"
    usage: ClassVar[str] = ""       # a request's right form, shown when it does not fit
    _declared: ClassVar[dict[str, tuple[Any, Field]] | None] = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._declared = None

    def __init__(self, **values):
        for name, (_tp, spec) in self.fields().items():
            if name in values:
                setattr(self, name, values.pop(name))
            elif spec.default is not MISSING:
                setattr(self, name, spec.default)
            elif spec.optional:
                setattr(self, name, None)
            else:
                raise TypeError(f"{type(self).__name__}: {name} is required")
        if values:
            raise TypeError(f"{type(self).__name__}: unknown field(s) {', '.join(sorted(values))}")

    @classmethod
    def fields(cls) -> dict[str, tuple[Any, Field]]:
        """name -> (type, Field), in declaration order (base classes first)."""
        if cls.__dict__.get("_declared") is None:
            hints = typing.get_type_hints(cls, include_extras=True)
            out: dict[str, tuple[Any, Field]] = {}
            for klass in reversed(cls.__mro__):
                for name in klass.__dict__.get("__annotations__", {}):
                    if name.startswith("_") or typing.get_origin(hints[name]) is ClassVar:
                        continue
                    spec = getattr(cls, name, MISSING)
                    spec = spec if isinstance(spec, Field) else Field(spec)
                    out[name] = (hints[name], spec if spec.key else replace(spec, key=name))
            cls._declared = out
            return out
        return cls.__dict__["_declared"]

    @classmethod
    def parse(cls, data, where: str = ""):
        """The request's JSON as an instance, or Invalid naming the first thing wrong."""
        return parse(cls, data, where)

    def as_dict(self) -> dict:
        return {spec.key: getattr(self, name) for name, (_tp, spec) in self.fields().items()
                if getattr(self, name) is not None or not spec.optional}

    def given(self) -> set[str]:
        """The fields the request carried (those parse saw), as opposed to defaults."""
        return getattr(self, "_given", set())

    def given_items(self) -> dict:
        """{JSON name: value} of the fields the request carried."""
        return {spec.key: getattr(self, name) for name, (_tp, spec) in self.fields().items()
                if name in self.given()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self.fields())})"


# -- reading a type ----------------------------------------------------------------------------
def _split(tp) -> tuple[Any, Field]:
    """Annotated[T, Field] -> (T, Field); other types -> (T, no constraints)."""
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        spec = Field()
        for m in meta:
            if isinstance(m, Field):
                spec = _merge(spec, m)
        inner, inner_spec = _split(base)
        return inner, _merge(inner_spec, spec)
    return tp, Field()


def _merge(under: Field, over: Field) -> Field:
    """A field's own constraints over those of its Annotated type."""
    changes = {k: v for k, v in vars(over).items()
               if not (v is None or v is MISSING or v is False or (isinstance(v, str) and not v))}
    if not over.enforce:
        changes["enforce"] = False
    return replace(under, **changes)


def _union_args(tp) -> tuple | None:
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return typing.get_args(tp)
    return None


def is_model(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, Model)


def describe(tp) -> str:
    """A type in a household-readable word, for error messages."""
    tp, spec = _split(tp)
    if spec.words:
        return spec.words
    if tp is str:
        return "a string"
    if tp is bool:
        return "true or false"
    if tp is int:
        return "a whole number"
    if tp is float:
        return "a number"
    if tp is type(None) or tp is None:
        return "null"
    if is_model(tp):
        return "an object"
    origin = typing.get_origin(tp)
    if origin is list:
        return "a list"
    if origin is dict:
        return "an object"
    if origin is Literal:      # an empty string among the choices means "left out": said so in words
        choices = typing.get_args(tp)
        said = ", ".join(repr(a) if not isinstance(a, str) else a for a in choices if a != "")
        return f"one of {said}" + (" (or left out)" if "" in choices else "")
    args = _union_args(tp)
    if args:
        return " or ".join(describe(a) for a in args)
    return "a value"


# -- parsing (requests) and checking (answers) --------------------------------------------------
def parse(tp, value, where: str = "", *, answer: bool = False, outer: Field | None = None):
    """`value` (decoded JSON) as type `tp`: a Model instance for a Model, the value itself
    otherwise. Requests run each field's validator (`check`) and fill defaults; answers
    (`answer=True`) are only checked, as the tests do with every answer the API gives.
    `outer`: the constraints of the field that holds the value.

    A value that fits takes the compiled path (_fast: one closure per type, made once);
    one that does not is read again by _explain, which names what is wrong."""
    if outer is None and not where:
        try:
            return _compiled(tp, answer)(value)
        except _Miss:
            pass
    return _explain(tp, value, where, answer=answer, outer=outer)


def _explain(tp, value, where: str = "", *, answer: bool = False, outer: Field | None = None):
    """parse's slow path: the same rules, with the name of each value for the message."""
    tp, spec = _split(tp)
    if outer is not None:
        spec = _merge(spec, outer)
    name = where or "the value"
    args = _union_args(tp)
    if args is not None:
        if value is None and type(None) in args:
            return None
        out = _parse_union(args, value, name, where, answer, spec, tp)
    elif tp is Any:
        out = value
    elif is_model(tp):
        out = _parse_model(tp, value, where, answer)
    elif tp is type(None) or tp is None:
        if value is not None:
            raise Invalid(f"{name} must be null")
        return None
    else:
        out = _parse_plain(tp, value, name, where, answer, spec)
    if spec.enforce:
        _bounds(spec, out, name)
    if spec.check is not None and not answer:
        try:
            out = spec.check(out)
        except Invalid:
            raise
        except ValueError as exc:
            raise Invalid(str(exc)) from None
    return out


def _parse_union(args: tuple, value, name: str, where: str, answer: bool, spec: Field, tp):
    problems = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _explain(arg, value, where, answer=answer, outer=replace(spec, check=None, enforce=False))
        except Invalid as exc:
            problems.append((_same_kind(arg, value), str(exc)))
    # The alternative of the value's own kind (an object for a model, a list for a list)
    # says best what is wrong with it.
    fitting = [text for same, text in problems if same]
    if len(fitting) == 1 or len(problems) == 1:
        raise Invalid(fitting[0] if len(fitting) == 1 else problems[0][1])
    raise Invalid(f"{name} must be {describe(tp)}")


def _parse_plain(tp, value, name: str, where: str, answer: bool, spec: Field):
    origin = typing.get_origin(tp)
    shown = "" if spec.secret else f", not {_show(value)}"
    if origin is Literal:
        if not any(type(a) is type(value) and a == value for a in typing.get_args(tp)):
            raise Invalid(f"{name} must be {describe(tp)}{shown}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise Invalid(f"{name} must be a {'non-empty ' if spec.min_items else ''}list{shown}")
        (item,) = typing.get_args(tp) or (Any,)
        return [_explain(item, v, f"{where or 'item'}[{i}]", answer=answer) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise Invalid(f"{name} must be an object{shown}")
        _key, item = typing.get_args(tp) or (str, Any)
        return {k: _explain(item, v, f"{where}.{k}" if where else k, answer=answer) for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise Invalid(f"{name} must be true or false{shown}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"{name} must be a whole number{shown}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(f"{name} must be a number{shown}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise Invalid(f"{name} must be a string{shown}")
        return value
    raise TypeError(f"model: unsupported type {tp!r} at {where}")


def _same_kind(tp, value) -> bool:
    """Whether `value` is of the JSON kind `tp` reads (object, list, text, number, boolean)."""
    tp, _spec = _split(tp)
    origin = typing.get_origin(tp)
    if is_model(tp) or origin is dict:
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list)
    if origin is Literal:
        return any(type(a) is type(value) for a in typing.get_args(tp))
    if tp in (int, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return tp is Any or tp is type(value)


def _parse_model(cls: type[Model], value, where: str, answer: bool):
    if not isinstance(value, dict):
        raise Invalid(f"{where or 'the request body'} must be a JSON object")
    declared = cls.fields()
    keys = [spec.key for _tp, spec in declared.values()]
    prefix = f"{where}." if where else ""
    unknown = sorted(set(value) - set(keys))
    if unknown and (cls.extra == "forbid" or (answer and cls.extra != "allow")):
        raise Invalid(f"unknown field(s) {', '.join(prefix + k for k in unknown)} "
                      f"(allowed: {', '.join(keys)})")
    missing = [spec.key for _tp, spec in declared.values() if spec.required and spec.key not in value]
    if len(missing) == 1:
        raise Invalid(f"{prefix}{missing[0]} is required")
    if missing:
        raise Invalid(f"{', '.join(prefix + k for k in missing)} are required")
    values, given = {}, set()
    for name, (ftp, spec) in declared.items():
        if spec.key in value:
            values[name] = _explain(ftp, value[spec.key], prefix + spec.key, answer=answer, outer=spec)
            given.add(name)
        elif spec.default is not MISSING:
            values[name] = spec.default
    if answer:
        return value
    obj = cls.__new__(cls)
    for name in declared:
        setattr(obj, name, values.get(name))
    obj._given = given        # type: ignore[attr-defined]  # what given() reads
    return obj


def _bounds(spec: Field, value, name: str) -> None:
    if value is None:
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if spec.minimum is not None and value < spec.minimum or spec.maximum is not None and value > spec.maximum:
            raise Invalid(f"{name} must be from {_num(spec.minimum)} to {_num(spec.maximum)}, not {value}"
                          if spec.minimum is not None and spec.maximum is not None else
                          f"{name} must be at least {_num(spec.minimum)}, not {value}" if spec.minimum is not None
                          else f"{name} must be at most {_num(spec.maximum)}, not {value}")
    if isinstance(value, str):
        if spec.min_length is not None and len(value) < spec.min_length:
            raise Invalid(f"{name} must be at least {spec.min_length} characters" if spec.min_length > 1
                          else f"{name} must not be empty")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise Invalid(f"{name} must be at most {spec.max_length} characters")
        if spec.pattern is not None and not re.search(spec.pattern, value):
            raise Invalid(f"{name} must be {spec.words or 'text of the form ' + spec.pattern}"
                          + ("" if spec.secret else f", not {_show(value)}"))
    if isinstance(value, list) and spec.min_items is not None and len(value) < spec.min_items:
        raise Invalid(f"{name} must be a non-empty list" if spec.min_items == 1 else
                      f"{name} must have at least {spec.min_items} items")


def _num(x) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the compiled path ------------------------------------------------------------------------
class _Miss(Exception):
    """The compiled path met something it does not accept: _explain says what."""


_CACHE: dict = {}


def _compiled(tp, answer: bool):
    key = (tp, answer)
    try:
        return _CACHE[key]
    except KeyError:
        pass
    except TypeError:            # an unhashable type: not cached
        return _fast(tp, None, answer)
    fn = _CACHE[key] = _fast(tp, None, answer)
    return fn


def _fast(tp, outer: Field | None, answer: bool):
    """A function value -> parsed value, raising _Miss where _explain would raise Invalid."""
    tp, spec = _split(tp)
    if outer is not None:
        spec = _merge(spec, outer)
    args = _union_args(tp)
    if args is not None:
        inner = replace(spec, check=None, enforce=False)
        nullable = type(None) in args
        alternatives = [_fast(a, inner, answer) for a in args if a is not type(None)]

        def base(value):
            if value is None and nullable:
                return None
            for alt in alternatives:
                try:
                    return alt(value)
                except _Miss:
                    pass
            raise _Miss
    elif tp is Any:
        def base(value):
            return value
    elif is_model(tp):
        base = _fast_model(tp, answer)
    elif tp is type(None) or tp is None:
        def base(value):
            if value is not None:
                raise _Miss
            return None
    else:
        base = _fast_plain(tp, answer)
    bounded = spec.enforce and any(getattr(spec, k) is not None for k in
                                   ("minimum", "maximum", "min_length", "max_length", "pattern", "min_items"))
    check = spec.check if not answer else None
    if not bounded and check is None:
        return base

    def constrained(value):
        out = base(value)
        if out is None:
            return out
        if bounded:
            try:
                _bounds(spec, out, "")
            except Invalid:
                raise _Miss from None
        if check is not None:
            try:
                out = check(out)
            except ValueError:
                raise _Miss from None
        return out
    return constrained


def _fast_plain(tp, answer: bool):
    origin = typing.get_origin(tp)
    if origin is Literal:
        allowed = {(type(a), a) for a in typing.get_args(tp)}

        def literal(value):
            try:
                if (type(value), value) in allowed:
                    return value
            except TypeError:
                pass
            raise _Miss
        return literal
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        each = _fast(item, None, answer)

        def items(value):
            if type(value) is not list:
                raise _Miss
            return [each(v) for v in value]
        return items
    if origin is dict:
        _key, item = typing.get_args(tp) or (str, Any)
        each = _fast(item, None, answer)

        def mapping(value):
            if type(value) is not dict:
                raise _Miss
            return {k: each(v) for k, v in value.items()}
        return mapping
    kinds = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}
    if tp not in kinds:
        raise TypeError(f"model: unsupported type {tp!r}")
    accepted = kinds[tp]
    no_bool = tp is not bool

    def scalar(value):
        if type(value) not in accepted or (no_bool and type(value) is bool):
            raise _Miss
        return value
    return scalar


def _fast_model(cls: type[Model], answer: bool):
    declared = cls.fields()
    known = frozenset(spec.key for _tp, spec in declared.values())
    plan = [(name, spec.key, spec.required, spec.default, None) for name, (_tp, spec) in declared.items()]
    forbid = cls.extra == "forbid" or (answer and cls.extra != "allow")
    built: list = []

    def fields():
        # built on first use: a model may hold itself
        if not built:
            pairs = zip(plan, declared.values(), strict=True)
            built.extend((name, key, required, default, _fast(ftp, spec, answer))
                         for (name, key, required, default, _), (ftp, spec) in pairs)
        return built

    def model(value):
        if type(value) is not dict:
            raise _Miss
        if forbid and not known.issuperset(value):
            raise _Miss
        if answer:
            for _name, key, required, _default, fn in fields():
                if key in value:
                    fn(value[key])
                elif required:
                    raise _Miss
            return value
        obj = cls.__new__(cls)
        given = set()
        for name, key, required, default, fn in fields():
            if key in value:
                setattr(obj, name, fn(value[key]))
                given.add(name)
            elif required:
                raise _Miss
            else:
                setattr(obj, name, None if default is MISSING else default)
        obj._given = given
        return obj
    return model


def check_answer(tp, value) -> str | None:
    """None if `value` fits `tp`, else what does not (the tests' check of every answer)."""
    try:
        parse(tp, value, answer=True)
    except Invalid as exc:
        return str(exc)
    return None


# -- JSON Schema (the OpenAPI 3.0 flavour) -----------------------------------------------------
class Schemas:
    """Collects the schema of every Model met, for components/schemas; types elsewhere
    refer to them with $ref. Two models may not share a name."""

    def __init__(self):
        self.named: dict[str, dict] = {}
        self._owner: dict[str, type] = {}

    def ref(self, cls: type[Model]) -> dict:
        name = cls.__name__
        if self._owner.get(name, cls) is not cls:
            raise ValueError(f"two models named {name}: {self._owner[name].__module__} and {cls.__module__}")
        if name not in self._owner:
            self._owner[name] = cls
            self.named[name] = {}           # placeholder: a model may refer to itself
            self.named[name] = self._model(cls)
        return {"$ref": f"#/components/schemas/{name}"}

    def _model(self, cls: type[Model]) -> dict:
        out: dict = {"type": "object"}
        doc = _doc(cls)
        if doc:
            out["description"] = doc
        required = [spec.key for _t, spec in cls.fields().values() if spec.required]
        if required:
            out["required"] = required
        out["properties"] = {spec.key: self.of(t, spec) for t, spec in cls.fields().values()}
        if cls.extra == "forbid":
            out["additionalProperties"] = False
        return out

    def of(self, tp, outer: Field | None = None) -> dict:
        tp, spec = _split(tp)
        if outer is not None:
            spec = _merge(spec, outer)
        nullable = False
        args = _union_args(tp)
        if args is not None and type(None) in args:
            nullable = True
            rest = tuple(a for a in args if a is not type(None))
            tp = rest[0] if len(rest) == 1 else Union[rest]      # noqa: UP007 (a runtime Union)
        schema = self._bare(tp)
        if nullable:
            schema = ({"allOf": [schema], "nullable": True} if "$ref" in schema or "anyOf" in schema
                      else {**schema, "nullable": True})
        for key, attr in (("description", "doc"), ("minimum", "minimum"), ("maximum", "maximum"),
                          ("minLength", "min_length"), ("maxLength", "max_length"), ("pattern", "pattern"),
                          ("minItems", "min_items")):
            value = getattr(spec, attr)
            if value not in (None, ""):
                if key == "description" and "$ref" in schema:
                    schema = {"allOf": [schema]}
                schema[key] = int(value) if isinstance(value, float) and value.is_integer() else value
        if spec.default is not MISSING and not callable(spec.default):
            schema["default"] = spec.default
        if spec.example is not MISSING:
            schema["example"] = spec.example
        if spec.secret:
            schema.update(format="password", writeOnly=True)
        return schema

    def _bare(self, tp) -> dict:
        if tp is Any:
            return {}
        if is_model(tp):
            return self.ref(tp)
        origin = typing.get_origin(tp)
        if origin is Literal:
            values = list(typing.get_args(tp))
            kinds = {type(v) for v in values}
            names = {str: "string", int: "integer", bool: "boolean", float: "number"}
            kind = names[kinds.pop()] if len(kinds) == 1 else None
            return {"type": kind, "enum": values} if kind else {"enum": values}
        if origin is list:
            (item,) = typing.get_args(tp) or (Any,)
            return {"type": "array", "items": self.of(item)}
        if origin is dict:
            _k, item = typing.get_args(tp) or (str, Any)
            return {"type": "object", "additionalProperties": self.of(item) if item is not Any else True}
        args = _union_args(tp)
        if args is not None:
            return {"anyOf": [self.of(a) for a in args]}
        simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
        if tp in simple:
            return {"type": simple[tp]}
        raise TypeError(f"model: no schema for {tp!r}")


def _doc(obj) -> str:
    doc = obj.__doc__ or ""
    if obj is Model or doc == Model.__doc__:
        return ""
    return " ".join(doc.split())
