"""Bound calls whose arguments are unboxed once, when they are bound, not at every call.

numba's entry point to a compiled kernel (its C wrapper) converts every argument of every call
from Python: an array costs it `numba_adapt_ndarray` and `PyArray_MultiplyList` and a few tuple
look-ups, some 12 ns hot and more once the step has moved the array's header out of the cache. A
bound call (`physics.core.compiled.bind`) passes the same arrays every time, and RATTLE's stage
passes 258 of them (its bundles share many), the start of the joints' sub-step 140: sampled with
perf over the pendulum's steps, the conversion was a fifth of the step, more than the physics
compiled below it.

The compiled function itself (numba's native function, `CompileResult.fndesc.llvm_func_name`)
takes each argument flattened by its data model (`BaseContext.get_arg_packer`): an array is its
meminfo, parent, nitems, itemsize, data, shape and strides; a tuple its members in order; a
number itself. `call` flattens the arguments once into an image of 8-byte slots, and calls the
native function through a trampoline that loads every slot and passes it on (llvmlite, without
optimization: its code is loads and one call, and a trampoline of 2,169 arguments then compiles in
about 20 ms where LLVM's optimization took a second). One trampoline serves every call of the
same flattened types; the native function's address is its argument, so it is made once a
process and kept.

Only for kernels without reference counts (`kernel(refcounts=False)`, physics.core.compiled,
6): they take no reference to an array, so the image's meminfo is null, and their caller holds
every array they read for as long as the call is bound. numba's status codes (`callconv`):
0 returned a value, −2 returned None, anything else raised. The exception is then raised again
through numba's own entry point with the same arguments, which raises it as numba would; the
kernel has by then done part of its work twice, as an exception stops a step in any case.

The image holds data addresses: a bound call's arrays are never resized while it is kept
(`bind`'s own contract: arrays that live as long as a topology, written in place). The same bits
as numba's entry point: the same compiled code, with the same values (tests/test_unboxed.py).
"""
import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba.core import types

# Arrays from which a call is unboxed once: a ctypes call costs some 0.3 µs more than numba's
# entry point, which converts a dozen arrays in about that time
MIN_ARRAYS = 16

# numba's ArrayModel members, in the order its native functions take them flattened
ARRAY_MEMBERS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")
STATUS_OK, STATUS_NONE = 0, -2      # numba.core.callconv's RETCODE_OK and RETCODE_NONE

_I64 = ir.IntType(64)
_lock = threading.Lock()
_engines = []           # the MCJIT engines holding the trampolines' code, kept for the process
_trampolines = {}       # (argument types, return type) as text -> (address, return slots)


class Unsupported(TypeError):
    """An argument or return type this module does not flatten: the call keeps numba's entry point."""


def count_arrays(argtypes):
    """The arrays among numba types `argtypes`, tuples' members counted."""
    total = 0
    for t in argtypes:
        if isinstance(t, types.Array):
            total += 1
        elif isinstance(t, types.BaseTuple):
            total += count_arrays(t.types)
    return total


def flatten(t, value, out):
    """Append (kind, value) for each slot of `value` of numba type `t`, in the native function's
    order: kind 'p' a pointer, 'i' an integer, 'f' a double, 'n' none's slot."""
    if isinstance(t, types.Array):
        if not isinstance(value, np.ndarray):
            raise Unsupported(f"{t} given {type(value).__name__}")
        out += [("p", 0), ("p", id(value)), ("i", value.size), ("i", value.itemsize),
                ("p", value.__array_interface__["data"][0])]
        out += [("i", n) for n in value.shape]
        out += [("i", n) for n in value.strides]
    elif isinstance(t, types.BaseTuple):
        if len(t.types) != len(value):
            raise Unsupported(f"{t} given {len(value)} items")
        for member, item in zip(t.types, value):
            flatten(member, item, out)
    elif isinstance(t, types.Boolean):
        out.append(("i", int(bool(value))))
    elif isinstance(t, types.Integer):
        out.append(("i", int(value)))
    elif isinstance(t, types.Float):
        out.append(("f", float(value)))
    elif isinstance(t, types.NoneType):
        out.append(("n", 0))
    else:
        raise Unsupported(str(t))
    return out


def _fits(kind, llvm_type):
    """Whether a slot of `kind` is what the native function takes as `llvm_type`."""
    if kind == "p":
        return isinstance(llvm_type, ir.PointerType)
    if kind == "i":
        return isinstance(llvm_type, ir.IntType)
    if kind == "f":
        return isinstance(llvm_type, ir.DoubleType)
    return True     # none's slot: whatever its model is, never read


def _return_slots(restype):
    """The converters of a return value's scalars, one per out slot: ('f' | 'i' | 'b', ...)."""
    if isinstance(restype, types.NoneType):
        return ()
    members = restype.types if isinstance(restype, types.BaseTuple) else (restype,)
    slots = []
    for t in members:
        if isinstance(t, types.Boolean):
            slots.append("b")
        elif isinstance(t, types.Integer):
            slots.append("i")
        elif isinstance(t, types.Float):
            slots.append("f")
        else:
            raise Unsupported(f"returns {restype}")
    return tuple(slots)


def _build(fnty, slots):
    """The trampoline's module text: i32 trampoline(i64* image, i8* function, i64* out) loads each
    of the native function's arguments from its slot, calls it, and stores the return value's
    scalars in `out`, one a slot (a double by its bits, an integer widened)."""
    module = ir.Module(name="unboxed")
    i8p = ir.IntType(8).as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.IntType(32), [_I64.as_pointer(), i8p, _I64.as_pointer()]),
                           name="trampoline")
    builder = ir.IRBuilder(function.append_basic_block())
    image, address, out = function.args
    returned = builder.alloca(fnty.args[0].pointee)
    builder.store(ir.Constant(fnty.args[0].pointee, None), returned)
    excinfo = builder.alloca(fnty.args[1].pointee)
    builder.store(ir.Constant(fnty.args[1].pointee, None), excinfo)
    values = []
    for n, argument in enumerate(fnty.args[2:]):
        at = builder.gep(image, [ir.Constant(_I64, n)])
        if isinstance(argument, ir.PointerType):
            values.append(builder.inttoptr(builder.load(at), argument))
        else:
            values.append(builder.load(builder.bitcast(at, argument.as_pointer())))
    status = builder.call(builder.bitcast(address, fnty.as_pointer()), [returned, excinfo] + values)
    if slots:
        value = builder.load(returned)
        scalars = [builder.extract_value(value, k) for k in range(len(slots))] if len(slots) > 1 or isinstance(
            value.type, ir.LiteralStructType) else [value]
        for k, scalar in enumerate(scalars):
            if isinstance(scalar.type, ir.DoubleType):
                scalar = builder.bitcast(scalar, _I64)
            elif scalar.type.width < 64:
                scalar = builder.zext(scalar, _I64)
            builder.store(scalar, builder.gep(out, [ir.Constant(_I64, k)]))
    builder.ret(status)
    return str(module)


def _trampoline(fnty, slots):
    """The address of the trampoline for native functions of type `fnty` (compiled once a process)."""
    key = (str(fnty), slots)
    with _lock:
        found = _trampolines.get(key)
        if found is None:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            module = llvm.parse_assembly(_build(fnty, slots))
            module.verify()
            machine = llvm.Target.from_default_triple().create_target_machine(opt=0, codemodel="jitdefault")
            engine = llvm.create_mcjit_compiler(module, machine)
            engine.finalize_object()
            _engines.append(engine)
            found = _trampolines[key] = engine.get_function_address("trampoline")
        return found


def call(kernel, overload, args):
    """`overload` (a compiled version of `kernel`, a numba dispatcher) called with `args` as a call
    of no arguments whose arguments are unboxed once (module docstring), or None where that does
    not apply: a kernel with reference counts, fewer than MIN_ARRAYS arrays, or a type this module
    does not flatten."""
    if kernel.targetoptions.get("_nrt", True):
        return None
    signature = overload.signature
    if count_arrays(signature.args) < MIN_ARRAYS:
        return None
    context = overload.target_context
    try:
        model = context.data_model_manager[types.float64[:]]
        if tuple(model._fields) != ARRAY_MEMBERS:
            return None
        flat = []
        for t, value in zip(signature.args, args):
            flatten(t, value, flat)
        slots = _return_slots(signature.return_type)
    except Unsupported:
        return None
    argument_types = context.get_arg_packer(signature.args).argument_types
    if len(flat) != len(argument_types) or not all(_fits(k, t) for (k, _), t in zip(flat, argument_types)):
        return None
    fnty = context.call_conv.get_function_type(signature.return_type, signature.args)
    image = np.zeros(len(flat), np.int64)
    floats = image.view(np.float64)
    for n, (kind, value) in enumerate(flat):
        if kind == "f":
            floats[n] = value
        else:
            image[n] = value
    out = np.zeros(max(1, len(slots)), np.int64)
    native = overload.library.get_pointer_to_function(overload.fndesc.llvm_func_name)
    # PYFUNCTYPE keeps the GIL, as numba's entry point does unless the kernel is nogil
    prototype = ctypes.CFUNCTYPE if kernel.targetoptions.get("nogil") else ctypes.PYFUNCTYPE
    trampoline = prototype(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
        _trampoline(fnty, slots))
    pointers = (ctypes.c_void_p(image.ctypes.data), ctypes.c_void_p(native), ctypes.c_void_p(out.ctypes.data))
    entry = overload.entry_point
    ints, out_floats = memoryview(out), memoryview(out.view(np.float64))
    keep = (args, image, out, trampoline)     # alive as long as the call: the image points into args

    def failed(status):
        # numba's entry point raises the kernel's exception as numba would (module docstring)
        entry(*args)
        raise RuntimeError(f"{kernel.__name__}: its compiled code returned status {status}, and numba's "
                           "entry point returned without raising")

    image_pointer, native_pointer, out_pointer = pointers
    if not slots:
        def bound():
            status = trampoline(image_pointer, native_pointer, out_pointer)
            if status != STATUS_OK and status != STATUS_NONE:
                failed(status)
            return None
    elif slots == ("f",):
        def bound():
            status = trampoline(image_pointer, native_pointer, out_pointer)
            if status != STATUS_OK:
                failed(status)
            return out_floats[0]
    else:
        convert = tuple(float if s == "f" else bool if s == "b" else int for s in slots)
        single = len(slots) == 1 and not isinstance(signature.return_type, types.BaseTuple)

        def bound():
            status = trampoline(image_pointer, native_pointer, out_pointer)
            if status != STATUS_OK:
                failed(status)
            values = tuple(c(out_floats[k] if c is float else ints[k]) for k, c in enumerate(convert))
            return values[0] if single else values
    # as functools.partial's: what is called, with what (`entry` is numba's own way in)
    bound.func, bound.args, bound.keep, bound.unboxed = entry, args, keep, True
    return bound
