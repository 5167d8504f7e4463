"""Bound calls whose arguments are unboxed once, when they are bound, not at every call.

numba's entry point to a compiled kernel (its C wrapper) converts every argument of every call
from Python: an array costs it `numba_adapt_ndarray`, `PyArray_MultiplyList` and a few tuple
look-ups, some 10 ns hot and more once the step has moved the array's header out of the cache. A
bound call (`physics.core.compiled.bind`) passes the same arrays every time, and RATTLE's stage
passes 258 of them (its bundles share many), the start of the joints' sub-step 140: sampled with
perf over the pendulum's steps, the conversion was a fifth of the step, more than the physics
compiled below it.

The compiled function itself (numba's native function, `CompileResult.fndesc.llvm_func_name`) takes
each argument flattened by its data model (`BaseContext.get_arg_packer`): an array is its meminfo,
parent, nitems, itemsize, data, shape and strides; a tuple its members in order; a number itself.
`call` flattens the arguments once into an image of 8-byte slots (the native function's address
first), and returns a builtin function (`PyCFunction_NewEx`, METH_NOARGS) whose self is (image,
arguments) and whose code is a trampoline: it loads every slot, calls the native function, and boxes
what it returns as numba's entry point does (a float, an int, a bool, a tuple of them, None; a call
whose return is another type keeps numba's entry point). A call then costs what a builtin's does: 60
ns with one array, 75 with 16, 145 with 64, where numba's entry point takes 80, 160 and 510 (one
process, in turn). The trampoline's module is built with llvmlite's IR builder and compiled by LLVM's
code generator at CODEGEN_OPT, with no IR passes (its code is loads and one call), in an LLVM context
of the trampolines' own (numba may be compiling in its own beside it), once for every call of the
same flattened types, and its object code is kept on disk (`_ObjectCache`). LLVM's code without
optimization took 170 ns a call with 16 arrays and 220 with 64: optimized, the pendulum's and the
chain's steps take a tenth less time, the ant's a twentieth. A scene's first step makes 11 to 21
trampolines, about 1 s in all the first time on a machine, and reads their objects in 5 to 20 ms
after that; the engine holds them in some 3 MiB (the ant's 15). What every bind
of one compiled version needs is made once for it (`_Plan`: a flattener written as Python source for
its types, its native address, its trampoline), so that a bind reads the arrays' fields alone: some
50 µs for the pile's contact rows (bound again for each new count of rows, 0.9 times a step), 0.3 ms
for RATTLE's stage.

Only for kernels without reference counts (`kernel(refcounts=False)`, physics.core.compiled, 6):
they take no reference to an array, so the image's meminfo is null, and the builtin's self holds
the arguments, every array the image points into, for as long as the call lives. A nogil kernel's
trampoline releases the GIL around the native call, as numba's entry point does. A status other
than a return (numba's `callconv`: 0 a value, −2 None) is raised by the code numba's own entry
point raises it with (`call_conv.raise_error`: the kernel's exception unpickled; without numba's
runtime an exception's arguments are constants), so a kernel that raises does so once, as it would
through numba.

The image holds data addresses: a bound call's arrays are never resized while it is kept
(`bind`'s own contract: arrays that live as long as a topology, written in place). The trampoline
reads self's items and the image's data where CPython's tuple and numpy's array keep them,
checked at import (`OFFSETS`; elsewhere every call keeps numba's entry point). The same bits as
numba's entry point: the same compiled code, with the same values (tests/test_unboxed.py, the
golden hashes).
"""
import ctypes
import functools
import hashlib
import threading

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba.core import types

# Arrays from which a call is unboxed once (with none, numba's entry point converts only numbers)
MIN_ARRAYS = 1
ARRAY_MEMBERS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")
HEAD = 1            # the image's slots before the arguments': the native function's address

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_I8P = ir.IntType(8).as_pointer()
_lock = threading.Lock()
_context = None     # the trampolines' own LLVM context (`_trampoline`), made with the first …
_machine = None     # … LLVM's code generator for them …
_engine = None      # … and the MCJIT engine holding their code, kept for the process …
_cache = None       # … and the object code on disk (`_ObjectCache`)
_trampolines = {}   # (function type as text, return kinds, nogil, numba runtime) -> the trampoline's PyMethodDef
_PYTHON = ("Py_IncRef", "PyFloat_FromDouble", "PyLong_FromLongLong", "PyLong_FromUnsignedLongLong", "PyBool_FromLong",
           "PyTuple_New", "PyTuple_SetItem", "PyEval_SaveThread", "PyEval_RestoreThread")
CODEGEN_OPT = 2         # LLVM's code generation level for the trampolines (no IR passes run: loads and a call)
CACHE_FORMAT = b"physics.core.unboxed trampoline 2\n"     # a cached object's first line …
OBJECT_BYTES_MAX = 2**24    # … and the most bytes a cached object file may have (the largest are some 100 KB)
_OBJECT_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\x64\x86")     # ELF, 64-bit Mach-O, x86-64 COFF


class Unsupported(TypeError):
    """An argument or return type this module does not flatten: the call keeps numba's entry point."""


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


METH_NOARGS = 0x0004
_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.argtypes = (ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)
_new_function.restype = ctypes.py_object


def _offsets():
    """(a tuple's first item, an array's data) as byte offsets into their objects, where this
    interpreter and numpy lay them out as the trampoline reads them, else None."""
    probe = np.zeros(1, np.int64)
    pair = (probe, None)
    item = ctypes.sizeof(ctypes.c_ssize_t) * 3        # PyVarObject's head
    data = ctypes.sizeof(ctypes.c_ssize_t) * 2        # PyObject's head
    if ctypes.c_void_p.from_address(id(pair) + item).value != id(probe):
        return None
    if ctypes.c_void_p.from_address(id(probe) + data).value != probe.ctypes.data:
        return None
    return item, data


OFFSETS = _offsets()        # checked once: CPython's PyTupleObject and numpy's PyArrayObject


def count_arrays(argtypes):
    """The arrays among numba types `argtypes`, tuples' members counted."""
    total = 0
    for t in argtypes:
        if isinstance(t, types.Array):
            total += 1
        elif isinstance(t, types.BaseTuple):
            total += count_arrays(t.types)
    return total


def layout(t, value, out):
    """Append, for each slot of an argument of numba type `t`, (kind, expression): kind 'p' a
    pointer, 'i' an integer, 'f' a double, 'n' none's slot (never read), in the native function's
    order; the expression (Python source) its value for the argument named `value`."""
    if isinstance(t, types.Array):
        _, data = OFFSETS
        out += [("p", "0"), ("p", f"id({value})"), ("i", f"{value}.size"), ("i", f"{value}.itemsize"),
                ("p", f"_address(id({value}) + {data}).value")]
        out += [("i", f"{value}.shape[{d}]") for d in range(t.ndim)]
        out += [("i", f"{value}.strides[{d}]") for d in range(t.ndim)]
    elif isinstance(t, types.BaseTuple):
        for k, member in enumerate(t.types):
            layout(member, f"{value}[{k}]", out)
    elif isinstance(t, types.Boolean):
        out.append(("i", f"(1 if {value} else 0)"))
    elif isinstance(t, types.Integer):
        # (an unsigned value past 2**63 − 1 goes into its slot as the same 64 bits)
        out.append(("i", f"int({value})" if t.signed else f"((int({value}) + 2**63) % 2**64 - 2**63)"))
    elif isinstance(t, types.Float):
        out.append(("f", f"float({value})"))
    elif isinstance(t, types.NoneType):
        out.append(("n", "0"))
    else:
        raise Unsupported(str(t))
    return out


def _flattener(argtypes, slots):
    """flat(args) -> (the integer and pointer slots' values, the doubles'), for arguments of these
    numba types laid out as `slots` (`layout`): Python made once a signature, so that a bind
    (a new count's views, on a contact-rich scene several a step) reads each array's fields
    without walking the types again."""
    names = [f"a{k}" for k in range(len(argtypes))]
    ints = ", ".join(expression for kind, expression in slots if kind != "f")
    floats = ", ".join(expression for kind, expression in slots if kind == "f")
    source = (f"def flat(args):\n    {''.join(n + ', ' for n in names)}= args\n"
              f"    return [{ints}], [{floats}]\n")
    scope = {"_address": ctypes.c_void_p.from_address}
    exec(compile(source, "<physics.core.unboxed>", "exec"), scope)
    return scope["flat"]


def _fits(kind, llvm_type):
    """Whether a slot of `kind` is what the native function takes as `llvm_type`."""
    if kind == "p":
        return isinstance(llvm_type, ir.PointerType)
    if kind == "i":
        return isinstance(llvm_type, ir.IntType)
    if kind == "f":
        return isinstance(llvm_type, ir.DoubleType)
    return True


def _return_kinds(restype):
    """How to box a return value of numba type `restype`: None (none), a kind ('f' float, 'i'
    signed, 'u' unsigned, 'b' bool), or a tuple of kinds (a tuple of scalars)."""
    if isinstance(restype, types.NoneType):
        return None
    members = restype.types if isinstance(restype, types.BaseTuple) else (restype,)
    kinds = []
    for t in members:
        if isinstance(t, types.Boolean):
            kinds.append("b")
        elif isinstance(t, types.Integer) and t.bitwidth <= 64:
            kinds.append("u" if not t.signed else "i")
        elif isinstance(t, types.Float):
            kinds.append("f")
        else:
            raise Unsupported(f"returns {restype}")
    return tuple(kinds) if isinstance(restype, types.BaseTuple) else kinds[0]


def _build(context, fnty, returns, nogil, name):
    """The trampoline's module text: PyObject *trampoline(PyObject *self, PyObject *unused), self
    (image, arguments) (module docstring), named `name`; `nogil`: the GIL released around the native call. A
    status other than a return raises as numba's entry point does (`context.call_conv.raise_error`:
    the kernel's own exception, unpickled)."""
    module = ir.Module(name="unboxed")
    obj = _I8P
    declare = lambda name, ret, *args: ir.Function(module, ir.FunctionType(ret, list(args)), name=name)
    incref = declare("Py_IncRef", ir.VoidType(), obj)
    from_double = declare("PyFloat_FromDouble", obj, ir.DoubleType())
    from_long = declare("PyLong_FromLongLong", obj, _I64)
    from_unsigned = declare("PyLong_FromUnsignedLongLong", obj, _I64)
    from_bool = declare("PyBool_FromLong", obj, _I64)
    tuple_new = declare("PyTuple_New", obj, _I64)
    tuple_set = declare("PyTuple_SetItem", _I32, obj, _I64, obj)
    save_thread = declare("PyEval_SaveThread", obj)
    restore_thread = declare("PyEval_RestoreThread", ir.VoidType(), obj)
    function = ir.Function(module, ir.FunctionType(obj, [obj, obj]), name=name)
    builder = ir.IRBuilder(function.append_basic_block())
    self = function.args[0]
    item, data = OFFSETS
    at = lambda base, offset: builder.gep(base, [ir.Constant(_I64, offset)])
    load_pointer = lambda base, offset: builder.load(builder.bitcast(at(base, offset), _I8P.as_pointer()))
    image_object = load_pointer(self, item)
    image = builder.bitcast(load_pointer(image_object, data), _I64.as_pointer())
    returned = builder.alloca(fnty.args[0].pointee)
    builder.store(ir.Constant(fnty.args[0].pointee, None), returned)
    excinfo = builder.alloca(fnty.args[1].pointee)
    builder.store(ir.Constant(fnty.args[1].pointee, None), excinfo)
    values = []
    for n, argument in enumerate(fnty.args[2:]):
        slot = builder.gep(image, [ir.Constant(_I64, HEAD + n)])
        if isinstance(argument, ir.PointerType):
            values.append(builder.inttoptr(builder.load(slot), argument))
        else:
            values.append(builder.load(builder.bitcast(slot, argument.as_pointer())))
    native = builder.inttoptr(builder.load(image), fnty.as_pointer())
    state = builder.call(save_thread, []) if nogil else None
    code = builder.call(native, [returned, excinfo] + values)
    if nogil:
        builder.call(restore_thread, [state])
    status = context.call_conv._get_return_status(builder, code, builder.load(excinfo))
    with builder.if_then(builder.not_(status.is_ok), likely=False):
        context.call_conv.raise_error(builder, context.get_python_api(builder), status)
        builder.ret(ir.Constant(obj, None))

    def box(value, kind):
        if kind == "f":     # (a float32 widened, as numba boxes it)
            double = value if isinstance(value.type, ir.DoubleType) else builder.fpext(value, ir.DoubleType())
            return builder.call(from_double, [double])
        wide = builder.zext(value, _I64) if value.type.width < 64 and kind != "i" else (
            builder.sext(value, _I64) if value.type.width < 64 else value)
        return builder.call({"b": from_bool, "u": from_unsigned}.get(kind, from_long), [wide])
    if returns is None:     # (None by its symbol, not its address: the object code is kept on disk)
        none = builder.bitcast(ir.GlobalVariable(module, ir.IntType(8), "_Py_NoneStruct"), obj)
        builder.call(incref, [none])
        builder.ret(none)
    elif isinstance(returns, tuple):
        value = builder.load(returned)
        result = builder.call(tuple_new, [ir.Constant(_I64, len(returns))])
        for k, kind in enumerate(returns):
            builder.call(tuple_set, [result, ir.Constant(_I64, k), box(builder.extract_value(value, k), kind)])
        builder.ret(result)
    else:
        builder.ret(box(builder.load(returned), returns))
    return str(module)


def _trampoline(context, fnty, returns, nogil):
    """The PyMethodDef of the trampoline for native functions of type `fnty` (made once a process,
    into the one engine the trampolines share: an engine of its own took some 1.7 MiB), its object
    code read from the cache where an earlier process left it (`_ObjectCache`)."""
    global _context, _machine, _engine, _cache
    key = (str(fnty), returns, nogil, context.enable_nrt)
    with _lock:
        found = _trampolines.get(key)
        if found is None:
            if _engine is None:
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                for name in _PYTHON:    # (numba's own helpers its error code calls are known to LLVM already)
                    llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
                llvm.add_symbol("_Py_NoneStruct", id(None))
                # an LLVM context of the trampolines' own: numba compiles in the global one, perhaps
                # beside this on another thread (the app's kernel loader), which a bind then neither
                # disturbs nor waits for (numba's compiler lock is held for a kernel's whole compile)
                context_, machine = llvm.create_context(), llvm.Target.from_default_triple().create_target_machine(
                    opt=CODEGEN_OPT, codemodel="jitdefault")
                cache = _ObjectCache(machine)
                _engine = llvm.create_mcjit_compiler(llvm.parse_assembly("", context=context_), machine)
                _context, _machine, _cache = context_, machine, cache
            name = _cache.name(key)
            code = _cache.load(name)
            address = _linked(code, name) if code is not None else 0
            if not address:
                module = llvm.parse_assembly(_build(context, fnty, returns, nogil, name), context=_context)
                module.verify()
                code = _machine.emit_object(module)
                address = _linked(code, name)
                if not address:
                    raise Unsupported("the trampoline's object did not link")
                _cache.keep(name, code)
            found = _trampolines[key] = _MethodDef(b"unboxed", address, METH_NOARGS, None)
        return found


def _linked(code, name):
    """The address of function `name` once the object code `code` is linked into the engine, or 0
    where the bytes are no object file of this platform's kinds or do not define it."""
    if not code.startswith(_OBJECT_MAGIC):      # (llvmlite would hand LLVM a null object: a crash)
        return 0
    _engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    _engine.finalize_object()
    return _engine.get_function_address(name)


def _source_digest():
    """SHA-256 of this module's source as imported (the code `_build` runs), or None (no cache)."""
    try:
        with open(__file__, "rb") as source:
            return hashlib.sha256(source.read()).hexdigest()
    except (OSError, NameError):
        return None


_SOURCE = _source_digest()


class _ObjectCache:
    """The trampolines' object code kept on disk, beside the compiled kernels
    (physics.core.compiled.cache_root()/trampolines). Making one costs a scene's first step: the
    module's text, built in Python (llvmlite's IR builder: 0.06 s for RATTLE's stage's 2,169
    arguments), and LLVM's code generation at CODEGEN_OPT (0.5 s for it; the pendulum's eleven
    take 0.2 and 0.8 s), whose code calls the pendulum's native functions a tenth of its step
    faster than LLVM's code without optimization. A later process reads the objects instead.

    An entry is named for what its code is made from (`name`): the function type, the return, the
    GIL, numba's runtime on or off, this module's source as imported, the interpreter's and numpy's
    layouts, numba's, llvmlite's and LLVM's versions, the target and CODEGEN_OPT (the code is for
    the target's generic processor: the machine is made without a CPU's name or features). It
    holds that name and its object's SHA-256, is written atomically once its object linked, and is
    read within OBJECT_BYTES_MAX from a regular file; one missing, unreadable, of another format or
    name, whose hash does not match, that is no object file or that defines no such function is
    made anew and written again; one that cannot be written leaves the next process to make it;
    without this module's source (`_SOURCE`) or a cache directory nothing is kept."""

    def __init__(self, machine):
        import sys

        import llvmlite
        import numba
        self.common = None if _SOURCE is None else "\n".join(str(part) for part in (
            CACHE_FORMAT, _SOURCE, OFFSETS, HEAD, sys.version, numba.__version__, llvmlite.__version__,
            llvm.llvm_version_info, machine.triple, CODEGEN_OPT))

    def name(self, key):
        """The trampoline's function name (its cache entry's too) for `key` (`_trampoline`'s)."""
        return "trampoline_" + hashlib.sha256(f"{self.common}\n{key}".encode()).hexdigest()[:40]

    def _path(self, name):
        if self.common is None:
            return None
        from physics.core.compiled import cache_root      # (here: compiled imports this module)
        root = cache_root()
        return None if root is None else root / "trampolines" / f"{name}.o"

    def _head(self, name, code):
        return CACHE_FORMAT + name.encode() + b"\n" + hashlib.sha256(code).hexdigest().encode() + b"\n"

    def load(self, name):
        """The object code of trampoline `name` from the cache, or None."""
        from physics.core.files import read_regular
        try:
            path = self._path(name)
            data = read_regular(path, OBJECT_BYTES_MAX) if path is not None else b""
        except (OSError, ValueError):
            return None
        size = len(self._head(name, b""))
        code = data[size:]
        return code if len(data) > size and data[:size] == self._head(name, code) else None

    def keep(self, name, code):
        """Write the object code `code` of trampoline `name` to the cache (nothing where it cannot)."""
        from physics.core.files import write_atomically
        try:
            path = self._path(name)
            if path is None:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            entry = self._head(name, code) + code
            write_atomically(path, lambda out: out.write(entry))
        except (OSError, ValueError):
            pass


class _Plan:
    """What every call of one compiled version takes: its flattener, where its doubles go in the
    image, its native function's address and its trampoline."""

    def __init__(self, kernel, overload):
        signature, context = overload.signature, overload.target_context
        if count_arrays(signature.args) < MIN_ARRAYS:
            raise Unsupported("too few arrays to gain")
        if tuple(context.data_model_manager[types.float64[:]]._fields) != ARRAY_MEMBERS:
            raise Unsupported("numba's array model has other members")
        slots = []
        for k, t in enumerate(signature.args):
            layout(t, f"a{k}", slots)
        returns = _return_kinds(signature.return_type)
        argument_types = context.get_arg_packer(signature.args).argument_types
        if len(slots) != len(argument_types) or not all(_fits(k, t) for (k, _), t in zip(slots, argument_types)):
            raise Unsupported("the native function takes other arguments")
        self.flat = _flattener(signature.args, slots)
        self.size = HEAD + len(slots)
        kinds = np.array([kind for kind, _ in slots])
        self.ints = HEAD + np.flatnonzero(kinds != "f")
        self.floats = HEAD + np.flatnonzero(kinds == "f")
        self.native = overload.library.get_pointer_to_function(overload.fndesc.llvm_func_name)
        if not self.native:
            raise Unsupported("no native function found")
        fnty = context.call_conv.get_function_type(signature.return_type, signature.args)
        self.definition = _trampoline(context, fnty, returns, bool(kernel.targetoptions.get("nogil")))


_plans = {}     # id(overload) -> (overload, its _Plan, or None where it has none)


def _plan(kernel, overload):
    """The `_Plan` of `overload`, made once (None: not supported)."""
    found = _plans.get(id(overload))
    if found is None or found[0] is not overload:
        try:
            plan = _Plan(kernel, overload)
        except Exception:       # anything this module cannot build keeps numba's entry point
            plan = None
        found = _plans[id(overload)] = (overload, plan)
    return found[1]


def call(kernel, overload, args):
    """`overload` (a compiled version of `kernel`, a numba dispatcher) called with `args`, as a call
    of no arguments whose arguments are unboxed once (module docstring), or None where that does
    not apply: a kernel with reference counts, fewer than MIN_ARRAYS arrays, or a type this module
    does not flatten."""
    if OFFSETS is None or kernel.targetoptions.get("_nrt", True):
        return None
    plan = _plan(kernel, overload)
    if plan is None:
        return None
    ints, floats = plan.flat(args)
    image = np.empty(plan.size, np.int64)
    image[0] = plan.native
    image[plan.ints] = ints
    image.view(np.float64)[plan.floats] = floats
    # a partial, as `bind`'s other calls are (its `func` the builtin; `unboxed` tells them apart);
    # the builtin's self holds the arguments, whose arrays the image points into
    bound = functools.partial(_new_function(ctypes.addressof(plan.definition), (image, args), None))
    bound.unboxed = True
    return bound
