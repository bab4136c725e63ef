/* The PEP 523 frame hook: book chapter 2, "The PEP 523 frame hook".

   CPython runs every Python function call through one C function, the
   "frame evaluator". PEP 523 lets an extension replace it for the whole
   interpreter. This file installs a replacement, eval_frame_hook(), that
   looks at each new frame before it runs and may run a *different* code
   object (one that dynamo produced) in its place.

   Works with CPython 3.11, 3.12 and 3.13. The frame structs are internal
   to CPython and change between versions; every difference is handled in
   the "version shims" section, so the rest of the file reads the same on
   all three versions. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "tinydynamo's frame hook supports CPython 3.11, 3.12 and 3.13 only"
#endif

/* [book:shims] */
/* ---- Version shims --------------------------------------------------- */
/* _PyInterpreterFrame lives in an internal header, which needs
   Py_BUILD_CORE. On 3.12 that header clashes with a public macro
   (CPython gh-105268), so the macro is removed first. */
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
#undef _PyGC_FINALIZED
#endif
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

/* The frame's code object and function object, under their per-version
   field names. */
#if PY_VERSION_HEX >= 0x030D0000
#define FRAME_CODE(f) ((PyCodeObject *)(f)->f_executable)
#else
#define FRAME_CODE(f) ((f)->f_code)
#endif
#if PY_VERSION_HEX >= 0x030C0000
#define FRAME_FUNC(f) ((PyFunctionObject *)(f)->f_funcobj)
#define get_code_extra PyUnstable_Code_GetExtra
#define set_code_extra PyUnstable_Code_SetExtra
#define request_code_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#else
#define FRAME_FUNC(f) ((f)->f_func)
#define get_code_extra _PyCode_GetExtra
#define set_code_extra _PyCode_SetExtra
#define request_code_extra_index _PyEval_RequestCodeExtraIndex
#endif

#if PY_VERSION_HEX >= 0x030D0000
/* Exported by 3.13, declared in an internal header we do not need. */
PyAPI_FUNC(void) _PyEval_FrameClearAndPop(PyThreadState *, _PyInterpreterFrame *);
#endif
/* [book:shims-end] */

/* [book:free-frame] */
/* ---- Freeing a frame the hook did not run ---------------------------- */
/* The caller allocated the frame on the thread's "data stack" (a stack of
   memory chunks for frames) and stored strong references in it: the
   function, the code, the argument values. Who gives them back when the
   hook answers the call itself, without running the frame? */
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
/* 3.12: the eval loop frees every frame it runs, so the caller does not;
   the hook must. CPython's function for this is not exported on 3.12, so
   this is our own version of it. The frame never ran, so it holds no
   frame object (nothing could see it yet) and no value stack: its
   references are the locals in localsplus[0:stacktop], f_locals, the
   function and the code. */
static void
pop_frame(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    PyObject **base = (PyObject **)frame;
    _PyStackChunk *chunk = tstate->datastack_chunk;
    if (base != &chunk->data[0]) {
        tstate->datastack_top = base;  /* just move the top back down */
        return;
    }
    /* The frame opened a new chunk: give the chunk back and make the
       previous chunk current again. */
    _PyStackChunk *previous = chunk->previous;
    tstate->datastack_chunk = previous;
    tstate->datastack_top = &previous->data[previous->top];
    tstate->datastack_limit = (PyObject **)((char *)previous + previous->size);
    PyObjectArenaAllocator arena;
    PyObject_GetArenaAllocator(&arena);
    arena.free(arena.ctx, chunk, chunk->size);
}

static void
free_frame(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    assert(frame->frame_obj == NULL);
    for (int i = 0; i < frame->stacktop; i++) {
        Py_XDECREF(frame->localsplus[i]);
    }
    Py_XDECREF(frame->f_locals);
    Py_DECREF(frame->f_funcobj);
    Py_DECREF(frame->f_code);
    pop_frame(tstate, frame);
}
#elif PY_VERSION_HEX >= 0x030D0000
/* 3.13: as on 3.12, the hook must free it, and CPython exports the
   function that does. */
static void
free_frame(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    _PyEval_FrameClearAndPop(tstate, frame);
}
#else
/* 3.11: the caller (_PyEval_Vector) frees the frame whatever the
   evaluator did, so there is nothing to do. */
static void
free_frame(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
}
#endif
/* [book:free-frame-end] */

/* [book:state] */
/* ---- State ----------------------------------------------------------- */
/* Each thread has its own callback (NULL: the hook is off in this thread)
   and its own "inside the callback" flag. _Thread_local gives every
   thread a separate copy of a C global. */
static _Thread_local PyObject *thread_callback = NULL;
static _Thread_local int in_callback = 0;
/* The replacement code the hook is about to call (see call_replacement). */
static _Thread_local PyCodeObject *running_replacement = NULL;

/* How many threads have a callback; the hook is installed while > 0. */
static int threads_with_callback = 0;

/* The frame evaluator that was installed before ours: normally CPython's
   own, but another PEP 523 user (torch._dynamo) may have left one there.
   It is put back when ours is uninstalled. Frames the hook leaves alone go
   to CPython's evaluator, never to another hook: two hooks that hand each
   other frames can cycle forever. */
static _PyFrameEvalFunction evaluator_before_ours = _PyEval_EvalFrameDefault;

/* Which co_extra slot is ours (every code object has a small array of
   such slots for tools like us), and the marker for "never intercept". */
static Py_ssize_t extra_index = -1;
static char skip_marker;
#define SKIP ((void *)&skip_marker)

/* Cache hits since take_cache_hits() last read them (tinydynamo.stats()
   adds them up). Counted here rather than in Python by the guard: a dict
   update was a tenth of a warm call's overhead. The GIL guards it. */
static Py_ssize_t cache_hits = 0;

/* CPython calls this when a code object dies, on what its slot holds:
   NULL too, once any slot of that code object has been used. */
static void
free_extra(void *extra)
{
    if (extra != SKIP) {
        Py_XDECREF((PyObject *)extra);
    }
}

static void *
code_extra(PyCodeObject *code)
{
    void *extra = NULL;
    get_code_extra((PyObject *)code, extra_index, &extra);
    return extra;
}
/* [book:state-end] */

/* [book:replacement] */
/* ---- Running a replacement ------------------------------------------- */
/* The frame's arguments are the first n slots of localsplus, in the order
   of co_varnames: positional, keyword-only, then the *args tuple and the
   **kwargs dict. CPython has already matched keywords and applied
   defaults, so a replacement that takes these n values positionally
   sees exactly what the original would have seen. */
static Py_ssize_t
num_args(PyCodeObject *code)
{
    return code->co_argcount + code->co_kwonlyargcount +
           ((code->co_flags & CO_VARARGS) != 0) +
           ((code->co_flags & CO_VARKEYWORDS) != 0);
}

static int
check_replacement(PyFunctionObject *func, PyObject *new_code, Py_ssize_t n)
{
    if (!PyCode_Check(new_code)) {
        PyErr_Format(PyExc_TypeError, "replacement for %R must be a code object, not %.100s",
                     func, Py_TYPE(new_code)->tp_name);
        return -1;
    }
    PyCodeObject *code = (PyCodeObject *)new_code;
    if (code->co_argcount != n || code->co_kwonlyargcount != 0 ||
        (code->co_flags & (CO_VARARGS | CO_VARKEYWORDS))) {
        PyErr_Format(PyExc_TypeError, "replacement code for %R must take exactly %zd "
                     "positional parameters and no *args, **kwargs or keyword-only ones", func, n);
        return -1;
    }
    Py_ssize_t ncells = func->func_closure ? PyTuple_GET_SIZE(func->func_closure) : 0;
    if (code->co_nfreevars != ncells) {
        PyErr_Format(PyExc_TypeError, "replacement code for %R has %d free variables, "
                     "but the function has %zd closure cells", func, code->co_nfreevars, ncells);
        return -1;
    }
    return 0;
}

/* Like FunctionType(new_code, f.__globals__, f.__name__, None, f.__closure__)
   called with the frame's n argument values. */
static PyObject *
call_replacement(_PyInterpreterFrame *frame, PyObject *new_code)
{
    PyFunctionObject *func = FRAME_FUNC(frame);
    Py_ssize_t n = num_args(FRAME_CODE(frame));
    if (check_replacement(func, new_code, n) < 0) {
        return NULL;
    }
    PyObject *replacement = PyFunction_New(new_code, func->func_globals);
    if (replacement == NULL) {
        return NULL;
    }
    Py_SETREF(((PyFunctionObject *)replacement)->func_name, Py_NewRef(func->func_name));
    PyObject *closure = func->func_closure ? func->func_closure : Py_None;
    PyObject *result = NULL;
    if (PyFunction_SetClosure(replacement, closure) == 0) {
        /* The replacement's own frame goes through the hook too: tell the
           hook to run it as it is. The frames it starts are offered. */
        running_replacement = (PyCodeObject *)new_code;
        result = PyObject_Vectorcall(replacement, frame->localsplus, n, NULL);
        running_replacement = NULL;
    }
    Py_DECREF(replacement);
    return result;
}
/* [book:replacement-end] */

/* [book:lookup] */
/* ---- The cache in co_extra ------------------------------------------- */
/* guard(*args, *cells): the frame's argument values, then the closure's
   cells. Runs with the in-callback flag set, so the guard's own frames
   are not intercepted. Returns 1 (pass), 0 (fail) or -1 (exception). */
static int
call_guard(PyObject *guard, _PyInterpreterFrame *frame)
{
    PyObject **args = frame->localsplus;
    Py_ssize_t n = num_args(FRAME_CODE(frame));
    PyObject *closure = FRAME_FUNC(frame)->func_closure;
    Py_ssize_t ncells = closure ? PyTuple_GET_SIZE(closure) : 0;
    if (ncells > 0) {  /* copy args and cells into one array */
        args = PyMem_Malloc((n + ncells) * sizeof(PyObject *));
        if (args == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(args, frame->localsplus, n * sizeof(PyObject *));
        memcpy(args + n, &PyTuple_GET_ITEM(closure, 0), ncells * sizeof(PyObject *));
    }
    PyObject *verdict = PyObject_Vectorcall(guard, args, n + ncells, NULL);
    if (ncells > 0) {
        PyMem_Free(args);
    }
    int passed = verdict ? PyObject_IsTrue(verdict) : -1;
    Py_XDECREF(verdict);
    return passed;
}

/* Each entry is an (owner, guard, new_code) tuple. Returns a new reference
   to the new_code of the first entry owned by `owner` whose guard passes,
   Py_None if there is none, or NULL with an exception set. */
static PyObject *
lookup(PyObject *entries, PyObject *owner, _PyInterpreterFrame *frame)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) {
            PyErr_Format(PyExc_TypeError, "cache entry must be an (owner, guard, new_code) "
                         "tuple, not %R", entry);
            return NULL;
        }
        if (PyTuple_GET_ITEM(entry, 0) != owner) {
            continue;
        }
        Py_INCREF(entry);  /* the guard could remove it from the list */
        int passed = call_guard(PyTuple_GET_ITEM(entry, 1), frame);
        PyObject *found = passed > 0 ? Py_NewRef(PyTuple_GET_ITEM(entry, 2)) : NULL;
        Py_DECREF(entry);
        cache_hits += passed > 0;
        if (passed != 0) {
            return found;  /* the hit, or NULL if the guard raised */
        }
    }
    return Py_NewRef(Py_None);
}

/* callback(func, args): a cache miss. Returns what the callback returned. */
static PyObject *
call_callback(PyObject *callback, _PyInterpreterFrame *frame)
{
    Py_ssize_t n = num_args(FRAME_CODE(frame));
    PyObject *args = PyTuple_New(n);
    if (args == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(args, i, Py_NewRef(frame->localsplus[i]));
    }
    PyObject *result = PyObject_CallFunctionObjArgs(callback, FRAME_FUNC(frame), args, NULL);
    Py_DECREF(args);
    return result;
}

/* The cache lookup, then the callback on a miss, both with the
   in-callback flag set. Returns a new reference to a code object to run
   instead, Py_None to run the frame as it is, or NULL on an exception. */
static PyObject *
choose_code(_PyInterpreterFrame *frame, PyObject *callback, PyObject *entries)
{
    in_callback = 1;
    PyObject *choice = Py_NewRef(Py_None);
    if (entries != NULL) {
        Py_INCREF(entries);  /* a guard could clear the code's cache */
        Py_SETREF(choice, lookup(entries, callback, frame));
        Py_DECREF(entries);
    }
    if (choice == Py_None) {
        Py_SETREF(choice, call_callback(callback, frame));
    }
    in_callback = 0;
    return choice;
}
/* [book:lookup-end] */

/* [book:hook] */
/* ---- The hook -------------------------------------------------------- */
/* CPython calls this for every frame it is about to run, in every thread,
   once the hook is installed. Returning the frame's result (or NULL with
   an exception set) is all the caller expects. */
static PyObject *
eval_frame_hook(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    PyObject *callback = thread_callback;
    /* Frames the hook leaves alone, cheapest tests first: this thread has
       no callback or is inside it; a generator or coroutine being resumed
       (it is owned by the generator, and may be thrown into); a frame
       with a locals mapping (module code, class bodies, exec); a frame
       that a trace or profile function runs (a debugger, coverage, a
       profiler: tooling, never the user's computation). */
    if (callback == NULL || in_callback || throwflag || tstate->tracing ||
        frame->owner != FRAME_OWNED_BY_THREAD || frame->f_locals != NULL) {
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    /* Another evaluator installed on top of ours (torch.compile running
       inside a tinydynamo frame) may hand us the frames it leaves alone;
       they belong to its compiled region, so we step aside until it is
       gone. */
    if (_PyInterpreterState_GetEvalFrameFunc(tstate->interp) != eval_frame_hook) {
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    if (FRAME_CODE(frame) == running_replacement) {
        running_replacement = NULL;  /* only this one frame */
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    void *extra = code_extra(FRAME_CODE(frame));
    if (extra == SKIP) {
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    Py_INCREF(callback);  /* the callback may replace itself */
    PyObject *choice = choose_code(frame, callback, (PyObject *)extra);
    Py_DECREF(callback);
    if (choice == Py_None) {
        Py_DECREF(choice);
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    /* The hook answers the call itself: run the replacement (unless the
       lookup or callback raised), then free the frame. */
    PyObject *result = choice ? call_replacement(frame, choice) : NULL;
    Py_XDECREF(choice);
    free_frame(tstate, frame);
    return result;
}
/* [book:hook-end] */

/* [book:api] */
/* ---- The Python API -------------------------------------------------- */
/* Install the hook when the first thread gets a callback; uninstall it
   when the last one drops its callback, so that Python runs at full
   speed again (with the hook installed, CPython no longer inlines
   Python-to-Python calls). */
static void
set_hook_installed(int installed)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (installed && current != eval_frame_hook) {
        evaluator_before_ours = current;
        _PyInterpreterState_SetEvalFrameFunc(interp, eval_frame_hook);
    }
    else if (!installed && current == eval_frame_hook) {
        _PyInterpreterState_SetEvalFrameFunc(interp, evaluator_before_ours);
        evaluator_before_ours = _PyEval_EvalFrameDefault;
    }
    /* If another evaluator was installed on top of ours, it may call ours
       for frames it leaves alone; ours then steps aside (see the hook) and
       runs them with CPython's evaluator. */
}

/* Make `callback` (None: no callback) this thread's callback; return the
   previous one (a new reference, Py_None for none), or NULL if `callback`
   is not callable. */
static PyObject *
swap_callback(PyObject *callback)
{
    if (callback != Py_None && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "callback must be callable or None, not %.100s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    PyObject *new_callback = callback == Py_None ? NULL : callback;
    int count = threads_with_callback + (new_callback != NULL) - (thread_callback != NULL);
    if ((count > 0) != (threads_with_callback > 0)) {
        set_hook_installed(count > 0);
    }
    threads_with_callback = count;
    PyObject *previous = thread_callback ? thread_callback : Py_NewRef(Py_None);
    thread_callback = Py_XNewRef(new_callback);
    return previous;  /* the thread's reference passes to the caller */
}

static PyObject *
set_eval_frame(PyObject *module, PyObject *callback)
{
    return swap_callback(callback);
}

/* call_with_callback(callback, fn, *args, **kwargs): fn(*args, **kwargs)
   run with `callback` as this thread's callback, the previous one put
   back after, even if fn raises. Every compiled graph runs this way with
   None (eval_frame.disable), so the hook leaves the graph's own frames
   alone: Python's "set_eval_frame(None); try: fn() finally:
   set_eval_frame(previous)" without a Python frame, on every call. */
static PyObject *
call_with_callback(PyObject *module, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "call_with_callback(callback, fn, *args, **kwargs)");
        return NULL;
    }
    PyObject *previous = swap_callback(args[0]);
    if (previous == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_Vectorcall(args[1], args + 2, nargs - 2, kwnames);
    PyObject *restored = swap_callback(previous);  /* keeps the exception, if any */
    Py_DECREF(previous);
    Py_XDECREF(restored);
    return result;
}

/* The code object behind obj, or NULL with a TypeError. */
static PyCodeObject *
as_code(PyObject *obj)
{
    if (!PyCode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected a code object, not %.100s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return (PyCodeObject *)obj;
}

static PyObject *
get_cache_entries(PyObject *module, PyObject *obj)
{
    PyCodeObject *code = as_code(obj);
    if (code == NULL) {
        return NULL;
    }
    void *extra = code_extra(code);
    if (extra == SKIP) {
        PyErr_Format(PyExc_RuntimeError, "%R is marked SKIP; clear_code() it first", obj);
        return NULL;
    }
    if (extra == NULL) {
        extra = PyList_New(0);
        if (extra == NULL || set_code_extra(obj, extra_index, extra) < 0) {
            Py_XDECREF(extra);
            return NULL;
        }
    }
    return Py_NewRef((PyObject *)extra);
}

static PyObject *
store_extra(PyObject *obj, void *value)
{
    if (as_code(obj) == NULL || set_code_extra(obj, extra_index, value) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
set_skip(PyObject *module, PyObject *obj)
{
    return store_extra(obj, SKIP);
}

static PyObject *
clear_code(PyObject *module, PyObject *obj)
{
    return store_extra(obj, NULL);
}

static PyObject *
is_skipped(PyObject *module, PyObject *obj)
{
    PyCodeObject *code = as_code(obj);
    return code ? PyBool_FromLong(code_extra(code) == SKIP) : NULL;
}

static PyObject *
take_cache_hits(PyObject *module, PyObject *unused)
{
    Py_ssize_t hits = cache_hits;
    cache_hits = 0;
    return PyLong_FromSsize_t(hits);
}

static PyObject *
python_version_hex(PyObject *module, PyObject *unused)
{
    return PyLong_FromUnsignedLong(PY_VERSION_HEX);
}

static PyMethodDef methods[] = {
    {"set_eval_frame", set_eval_frame, METH_O,
     "Set this thread's callback (a callable or None); return the previous one."},
    {"call_with_callback", (PyCFunction)(void (*)(void))call_with_callback, METH_FASTCALL | METH_KEYWORDS,
     "call_with_callback(callback, fn, *args, **kwargs): fn(*args, **kwargs) with callback "
     "as this thread's callback (None: none), the previous one restored after."},
    {"get_cache_entries", get_cache_entries, METH_O,
     "The list of (owner, guard, new_code) entries stored on a code object."},
    {"set_skip", set_skip, METH_O, "Mark a code object SKIP: its frames always run as they are."},
    {"clear_code", clear_code, METH_O, "Forget the cache entries or SKIP mark of a code object."},
    {"is_skipped", is_skipped, METH_O, "Whether a code object is marked SKIP."},
    {"take_cache_hits", take_cache_hits, METH_NOARGS,
     "The number of cache hits since the last call (then zero)."},
    {"python_version_hex", python_version_hex, METH_NOARGS,
     "PY_VERSION_HEX this module was built against."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_eval_frame",
    .m_doc = "The PEP 523 frame hook (book chapter 2).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__eval_frame(void)
{
    if (extra_index < 0) {
        extra_index = request_code_extra_index(free_extra);
        if (extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "no free co_extra slot left");
            return NULL;
        }
    }
    return PyModule_Create(&module);
}
/* [book:api-end] */
