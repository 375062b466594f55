/* Optional C accelerator for tnp.ndarray (pure-Python fallback in ndarray.py).
 *
 * `ArrayBase` is the base type of tnp.ndarray. It holds the two fields of the wrapper (the
 * backend array `_a` and the device `_dev`) and implements the three cheapest operations,
 * which in pure Python cost several times NumPy's own time:
 *
 *   x[key]        key an int, a slice, None, Ellipsis or a tuple of those
 *   x.T
 *   x.reshape(*shape)      (positional arguments only)
 *
 * It also gives tnp.ndarray the two protocols a Python subclass cannot define before Python
 * 3.12: the sequence protocol's item slot (`reversed(x)` and other PySequence_Check users: the
 * mapping slot alone is not a sequence) and the buffer protocol (the NumPy array's own buffer,
 * zero-copy; see base_getbuffer).
 *
 * The fast path applies when `x` is exactly tnp.ndarray (not a subclass), no gradient tape is
 * recording, and the backend result is exactly numpy.ndarray. Anything else calls the Python
 * implementation registered by ndarray.py (`install`), so behaviour is defined in one place.
 *
 * The Python-level protocols (issue 17, item 5) are here too: `patch_slots` points the type slots
 * of tnp.ndarray and tnp.Scalar (operators, comparisons, bool/float/int/index, len, iteration,
 * item assignment, a scalar's hash) at C functions, while the Python methods stay in the class
 * dicts (so `ndarray.__add__`, super() and the operation listeners still find them). Each C slot
 * computes host operands (NumPy arrays and scalars on the same device, Python numbers) itself and
 * calls the Python method for everything else, so the two builds agree by construction. Integer
 * indexing and iteration give tnp.Scalar values made here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *a;    /* the backend array */
    PyObject *dev;  /* its tnp device */
    PyObject *basew;    /* what `.base` answers: the tnp array this one is a view of, once known
                         * (NULL or None until then); see link_base */
} ArrayBase;

static PyTypeObject *nd_type = NULL;      /* tnp.ndarray */
static PyTypeObject *np_ndarray = NULL;   /* numpy.ndarray */
static PyTypeObject *np_generic = NULL;   /* numpy.generic (the scalars) */
static PyObject *host_device = NULL;      /* tnp's device('cpu'): host memory */
static PyObject *slow_getitem = NULL;     /* Python implementations (unbound functions) */
static PyObject *slow_T = NULL;
static PyObject *slow_reshape = NULL;
static int hook_on = 0;                   /* a recording hook is installed */
static PyObject *str_T = NULL;
static PyObject *str_reshape = NULL;
static PyObject *buffer_refusal = NULL;   /* Python: why an array has no buffer, or None */
static PyTypeObject *scalar_type = NULL;  /* tnp.Scalar */
static PyObject *py_wrap_scalarize = NULL; /* ndarray.wrap_scalarize(r, dev): every other result */
static PyObject *py_wrap_other = NULL;    /* ndarray._wrap_other(r, dev): what wrap() leaves */
static PyObject *versions = NULL;         /* ndarray._versions: id(root) -> [count, weakref] */
static PyObject *py_bump_version = NULL;  /* ndarray.bump_version(a): what the C bump cannot do */
/* NumPy's numeric scalar types (bool, integers, floats, complex, datetime64, timedelta64): results
 * of these types become tnp.Scalar here; anything else goes through wrap_scalarize. */
#define MAX_NUMERIC 32
static PyTypeObject *numeric_types[MAX_NUMERIC];
static int n_numeric = 0;
static int layout_ok = 0;                 /* the NumPy struct fields below were verified */

/* The first fields of NumPy's array and dtype structs (numpy/ndarraytypes.h: PyArrayObject_fields
 * and PyArray_Descr, the same in NumPy 1.x and 2.x). `check_layout` compares what they read with
 * what Python reads on sample arrays before they are used; a mismatch turns these paths off. */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
} np_array_head;

typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind;
} np_descr_head;

#define NP_KIND(a) (((np_descr_head *)((np_array_head *)(a))->descr)->kind)

static int
base_traverse(ArrayBase *self, visitproc visit, void *arg)
{
    Py_VISIT(self->a);
    Py_VISIT(self->dev);
    Py_VISIT(self->basew);
    return 0;
}

static int
base_clear(ArrayBase *self)
{
    Py_CLEAR(self->a);
    Py_CLEAR(self->dev);
    Py_CLEAR(self->basew);
    return 0;
}

static void
base_dealloc(ArrayBase *self)
{
    PyObject_GC_UnTrack(self);
    base_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A new tnp.ndarray holding `r` (a reference is stolen) on `dev`. */
static PyObject *
wrap_new(PyObject *r, PyObject *dev)
{
    ArrayBase *o = (ArrayBase *)nd_type->tp_alloc(nd_type, 0);
    if (o == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    o->a = r;
    Py_XINCREF(dev);
    o->dev = dev;
    return (PyObject *)o;
}

/* ---- views' `.base` (issue 28): a view made of tnp array `src` answers `.base` with `src` itself
 * (or with the array `src` is a view of), the same object every time, kept alive by the view, as
 * NumPy's `.base` keeps its array. Linked when the view is made: a few pointer comparisons on the
 * backend arrays' own base fields, no dictionary. */
static PyObject *str_base = NULL;

/* NumPy's base of host array `a` (a borrowed pointer, valid while `a` lives), or NULL. */
static inline PyObject *
host_base(PyObject *a)
{
    if (layout_ok)
        return ((np_array_head *)a)->base;
    PyObject *b = PyObject_GetAttr(a, str_base);
    if (b == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(b);   /* `a` holds it */
    return b == Py_None ? NULL : b;
}

static PyTypeObject ArrayBaseType;

/* The field as C may use it: a tnp array, or NULL (unset, None, or anything else a program
 * wrote into the writable `_basew` member). */
#define BASEW(o) (((ArrayBase *)(o))->basew != NULL && \
                  PyObject_TypeCheck(((ArrayBase *)(o))->basew, &ArrayBaseType) ? \
                  ((ArrayBase *)(o))->basew : NULL)

/* Whether tnp array `w` (exactly tnp.ndarray or a subclass, on the host) owns its memory in
 * NumPy's sense: neither its backend array nor the wrapper itself is a view. */
static inline int
owns_memory(PyObject *w)
{
    return BASEW(w) == NULL && host_base(((ArrayBase *)w)->a) == NULL;
}

/* The tnp array `w.base` answers with (new reference), made and kept on `w` the first time; NULL
 * without an error where C does not decide (a base that is not a plain NumPy array). */
static PyObject *
base_wrapper(PyObject *w)
{
    PyObject *bw = BASEW(w);
    if (bw != NULL) {
        Py_INCREF(bw);
        return bw;
    }
    PyObject *b = host_base(((ArrayBase *)w)->a);
    if (b == NULL || Py_TYPE(b) != np_ndarray || nd_type == NULL)
        return NULL;
    Py_INCREF(b);
    bw = wrap_new(b, ((ArrayBase *)w)->dev);
    if (bw == NULL)
        return NULL;
    Py_INCREF(bw);
    Py_XSETREF(((ArrayBase *)w)->basew, bw);
    return bw;
}

/* `o` (a new tnp array) was made of tnp array `src` by an operation: where `o` is a view of
 * `src` (its backend array is `src`'s, or its NumPy base is `src`'s array or that array's base),
 * set what `o.base` answers as NumPy sets a view's base: `src`, collapsed through arrays that do
 * not own their memory while they are of `o`'s own type. Returns 1 if linked, 0 if `o` is not a
 * view of `src` (or C leaves it to Python), -1 on error. */
static int
link_base(PyObject *o, PyObject *src)
{
    PyObject *r = ((ArrayBase *)o)->a, *sa = ((ArrayBase *)src)->a;
    if (r == NULL || sa == NULL || Py_TYPE(r) != np_ndarray || Py_TYPE(sa) != np_ndarray)
        return 0;
    PyObject *b = host_base(r);
    if (!(r == sa || (b != NULL && (b == sa || b == host_base(sa)))))
        return 0;
    PyObject *w = src;
    Py_INCREF(w);
    while (!owns_memory(w)) {
        PyObject *next = base_wrapper(w);
        if (next == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(w);
                return -1;
            }
            break;
        }
        if (Py_TYPE(next) != Py_TYPE(o)) {
            Py_DECREF(next);
            break;
        }
        Py_SETREF(w, next);
    }
    Py_XSETREF(((ArrayBase *)o)->basew, w);
    return 1;
}

/* A new tnp.ndarray holding `r` (stolen), a view made of `src`: linked as above. */
static PyObject *
wrap_view(PyObject *r, PyObject *src)
{
    PyObject *o = wrap_new(r, ((ArrayBase *)src)->dev);
    if (o != NULL && host_base(r) != NULL && link_base(o, src) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    return o;
}

static inline int
fast_ok(PyObject *self)
{
    return !hook_on && nd_type != NULL && Py_TYPE(self) == nd_type &&
           ((ArrayBase *)self)->a != NULL && Py_TYPE(((ArrayBase *)self)->a) == np_ndarray;
}

static inline int
simple_index_item(PyObject *k)
{
    return PyLong_CheckExact(k) || PySlice_Check(k) || k == Py_None || k == Py_Ellipsis;
}

static int
simple_key(PyObject *key)
{
    if (simple_index_item(key))
        return 1;
    if (PyTuple_CheckExact(key)) {
        Py_ssize_t n = PyTuple_GET_SIZE(key);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!simple_index_item(PyTuple_GET_ITEM(key, i)))
                return 0;
        return 1;
    }
    return 0;
}

static inline int
is_numeric_type(PyTypeObject *t)
{
    for (int i = 0; i < n_numeric; i++)
        if (numeric_types[i] == t)
            return 1;
    return 0;
}

/* Scalars made here come from a free list and are not tracked by the garbage collector: a Scalar
 * made in C holds a NumPy scalar and a device, which refer to nothing, and has no __dict__, so it
 * cannot be part of a cycle (CPython untracks tuples of atoms for the same reason). An element
 * loop makes and drops one per element; malloc and the collector's passes were most of its cost. */
#ifdef Py_GIL_DISABLED
#define SCALAR_FREE_MAX 1     /* no shared free list without the GIL */
#else
#define SCALAR_FREE_MAX 1024
#endif
static PyObject *scalar_free[SCALAR_FREE_MAX];
static int n_scalar_free = 0;
static PyObject *host_true = NULL, *host_false = NULL;   /* Scalar(np.True_/np.False_) on the host */

/* A new tnp.Scalar holding NumPy scalar `r` (a reference is stolen) on `dev`. */
static PyObject *
wrap_scalar(PyObject *r, PyObject *dev)
{
    if (!hook_on && dev == host_device && host_true != NULL &&
            (r == ((ArrayBase *)host_true)->a || r == ((ArrayBase *)host_false)->a)) {
        /* immutable, and NumPy's own booleans are two objects too; not while a hook records
         * (a tape, a tracer): there each boolean result must be an object of its own, whose
         * recorded value (a traced comparison) is not another's */
        PyObject *o = r == ((ArrayBase *)host_true)->a ? host_true : host_false;
        Py_DECREF(r);
        Py_INCREF(o);
        return o;
    }
    ArrayBase *o;
    if (SCALAR_FREE_MAX > 1 && n_scalar_free > 0) {
        o = (ArrayBase *)scalar_free[--n_scalar_free];
        (void)PyObject_Init((PyObject *)o, scalar_type);   /* refcount 1, holds its type */
    }
    else {
        o = (ArrayBase *)scalar_type->tp_alloc(scalar_type, 0);
        if (o == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        PyObject_GC_UnTrack(o);
    }
    o->a = r;
    Py_XINCREF(dev);
    o->dev = dev;
    return (PyObject *)o;
}

/* tnp.Scalar's tp_dealloc (see patch_slots); also the base dealloc of Scalar's Python subclasses,
 * whose instances are freed, never kept. */
static void
scalar_dealloc(PyObject *self)
{
    PyTypeObject *t = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (t->tp_weaklistoffset > 0 && *(PyObject **)((char *)self + t->tp_weaklistoffset) != NULL)
        PyObject_ClearWeakRefs(self);
    Py_CLEAR(((ArrayBase *)self)->a);
    Py_CLEAR(((ArrayBase *)self)->dev);
    Py_CLEAR(((ArrayBase *)self)->basew);
    if (SCALAR_FREE_MAX > 1 && t == scalar_type && n_scalar_free < SCALAR_FREE_MAX)
        scalar_free[n_scalar_free++] = self;
    else
        t->tp_free(self);
    Py_DECREF(t);   /* a heap type's instance holds a reference to it */
}

/* An element `r` (new reference, stolen) read from host array `a` of a tnp.ndarray on `dev`:
 * a view, a Scalar, or NULL without an error when the Python path must decide (object arrays,
 * whose elements are returned as they are, strings, records, ml_dtypes). */
static PyObject *
wrap_element(PyObject *r, PyObject *self)
{
    PyObject *a = ((ArrayBase *)self)->a;
    if (Py_TYPE(r) == np_ndarray)
        return wrap_view(r, self);
    PyObject *dev = ((ArrayBase *)self)->dev;
    if (layout_ok && scalar_type != NULL && is_numeric_type(Py_TYPE(r)) && NP_KIND(a) != 'O')
        return wrap_scalar(r, dev);
    Py_DECREF(r);
    return NULL;
}

/* What x[key] read from host array `a` of `self` (`r`: a new reference, or NULL with the error
 * set): the element wrapped, the error, or NULL without an error where Python must decide. */
static inline PyObject *
read_element(PyObject *self, PyObject *r)
{
    return r == NULL ? NULL : wrap_element(r, self);
}

static PyObject *
base_getitem(PyObject *self, PyObject *key)
{
    if (fast_ok(self) && simple_key(key)) {
        PyObject *r = read_element(self, PyObject_GetItem(((ArrayBase *)self)->a, key));
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    if (slow_getitem == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(slow_getitem, self, key, NULL);
}

static PyObject *
base_get_T(PyObject *self, void *closure)
{
    if (fast_ok(self)) {
        PyObject *r = PyObject_GetAttr(((ArrayBase *)self)->a, str_T);
        if (r == NULL)
            return NULL;
        if (Py_TYPE(r) == np_ndarray)
            return wrap_view(r, self);
        Py_DECREF(r);
    }
    if (slow_T == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_CallOneArg(slow_T, self);
}

static PyObject *
base_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs > 0 && fast_ok(self)) {
        /* a.reshape(*args) with the backend array in the slot before the arguments */
        PyObject *stack[9];
        if (nargs <= 8) {
            stack[0] = ((ArrayBase *)self)->a;
            for (Py_ssize_t i = 0; i < nargs; i++)
                stack[i + 1] = args[i];
            PyObject *r = PyObject_VectorcallMethod(str_reshape, stack, nargs + 1, NULL);
            if (r != NULL) {
                if (Py_TYPE(r) == np_ndarray)
                    return wrap_view(r, self);
                Py_DECREF(r);
            }
            else {
                /* let the Python path decide (it accepts more spellings and names the op) */
                PyErr_Clear();
            }
        }
    }
    if (slow_reshape == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    /* slow_reshape(self, *args, **kwargs) */
    PyObject *stack_small[10];
    PyObject **stack = stack_small;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    Py_ssize_t total = nargs + nkw;
    if (total + 1 > 10) {
        stack = PyMem_Malloc((total + 1) * sizeof(PyObject *));
        if (stack == NULL)
            return PyErr_NoMemory();
    }
    stack[0] = self;
    for (Py_ssize_t i = 0; i < total; i++)
        stack[i + 1] = args[i];
    PyObject *res = PyObject_Vectorcall(slow_reshape, stack, nargs + 1, kwnames);
    if (stack != stack_small)
        PyMem_Free(stack);
    return res;
}

/* x[i] for the sequence protocol (reversed(x), PySequence_GetItem): as x[int(i)] */
static PyObject *
base_sq_item(PyObject *self, Py_ssize_t i)
{
    if (fast_ok(self)) {
        PyObject *r = read_element(self, PySequence_GetItem(((ArrayBase *)self)->a, i));
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    PyObject *key = PyLong_FromSsize_t(i);
    if (key == NULL)
        return NULL;
    PyObject *r = base_getitem(self, key);
    Py_DECREF(key);
    return r;
}

/* Whether a PEP 3118 format describes a structured or void dtype ("T{...}", "3x"): NumPy reads
 * those back as another dtype (field titles and padding are lost), so they are not exported. */
static int
format_is_v_kind(const char *format)
{
    return format != NULL && (strchr(format, 'T') != NULL || strchr(format, 'x') != NULL);
}

/* The buffer of the backend array itself (zero-copy, writable when it is). numpy.asarray tries a
 * buffer before __array__, so what NumPy would read back differently has none: structured and
 * void arrays (BufferError; ml_dtypes arrays are refused by NumPy itself), and scalars (NumPy would
 * make a read-only 0-d array, where numpy.asarray of a NumPy scalar is writable; and numpy.array of
 * a list of scalars, which goes through here for each one, stays as fast as __array__ makes it).
 * Arrays on other devices have none (GPUs, and the fake cpu:N devices, which stand for memory
 * elsewhere): the Python check (`buffer_refusal`) raises a TypeError naming the device.
 * The refusals NumPy meets on its way to __array__ are raised here, with constant messages,
 * because a Python-level exception would cost more than the conversion. */
#define SCALAR_NO_BUFFER "a tnp scalar exports no buffer; use memoryview(numpy.asarray(s))"
/* (tnp.Scalar itself has no buffer slot, see drop_buffer: this is for its subclasses) */
static int
base_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    PyObject *a = ((ArrayBase *)self)->a;
    if (a == NULL) {
        PyErr_SetString(PyExc_BufferError, "tnp array not initialised");
        return -1;
    }
    if (np_ndarray != NULL && PyObject_TypeCheck(a, np_ndarray) &&
            ((ArrayBase *)self)->dev == host_device) {
        if (PyObject_GetBuffer(a, view, flags | PyBUF_FORMAT) < 0)
            return -1;
        if (format_is_v_kind(view->format)) {
            PyBuffer_Release(view);
            PyErr_SetString(PyExc_BufferError,
                            "a tnp array of a structured or void dtype exports no buffer (NumPy "
                            "would read it back as another dtype); use memoryview(numpy.asarray(x))");
            return -1;
        }
        if (!(flags & PyBUF_FORMAT))
            view->format = NULL;   /* as the consumer asked: unsigned bytes */
        return 0;
    }
    if (np_generic != NULL && PyObject_TypeCheck(a, np_generic)) {
        PyErr_SetString(PyExc_TypeError, SCALAR_NO_BUFFER);
        return -1;
    }
    if (buffer_refusal != NULL) {
        PyObject *why = PyObject_CallOneArg(buffer_refusal, self);
        if (why == NULL)
            return -1;
        Py_DECREF(why);
    }
    return PyObject_GetBuffer(a, view, flags);
}

static PyBufferProcs base_as_buffer = {
    (getbufferproc)base_getbuffer,
    0,      /* the exporter is the backend array: releasing the view releases its buffer */
};

static PySequenceMethods base_as_sequence = {
    0,                          /* sq_length: the Python class's __len__ */
    0, 0,
    (ssizeargfunc)base_sq_item, /* sq_item */
};

static PyMemberDef base_members[] = {
    {"_a", T_OBJECT_EX, offsetof(ArrayBase, a), 0, "the backend array"},
    {"_dev", T_OBJECT_EX, offsetof(ArrayBase, dev), 0, "the device"},
    {"_basew", T_OBJECT, offsetof(ArrayBase, basew), 0,
     "the tnp array .base answers with, once known (None until then)"},
    {NULL}
};

/* tnp.Scalar.__array_interface__: none (numpy.asarray then asks __array__), raised in C for the
 * reason above. Arrays have a Python property of their own, which shadows this one. */
static PyObject *
base_get_no_interface(PyObject *self, void *closure)
{
    PyErr_SetString(PyExc_AttributeError,
                    "__array_interface__: tnp scalars have none; use numpy.asarray(s)");
    return NULL;
}

static PyGetSetDef base_getset[] = {
    {"T", (getter)base_get_T, NULL, "The transposed array (a view).", NULL},
    {"__array_interface__", (getter)base_get_no_interface, NULL,
     "None for scalars (AttributeError); arrays override it.", NULL},
    {NULL}
};

static PyMethodDef base_methods[] = {
    {"reshape", (PyCFunction)(void (*)(void))base_reshape, METH_FASTCALL | METH_KEYWORDS,
     "reshape($self, /, *shape, order='C', copy=None)\n--\n\nA view (or copy) with a new shape; mirrors "
     "numpy.ndarray.reshape."},
    {NULL}
};

static PyMappingMethods base_as_mapping = {
    0,                          /* mp_length: the Python class defines __len__ */
    (binaryfunc)base_getitem,   /* mp_subscript */
    0,                          /* mp_ass_subscript: the Python class defines __setitem__ */
};

static PyTypeObject ArrayBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tnp._core._speedups.ArrayBase",
    .tp_basicsize = sizeof(ArrayBase),
    .tp_itemsize = 0,
    .tp_dealloc = (destructor)base_dealloc,
    .tp_as_mapping = &base_as_mapping,
    .tp_as_sequence = &base_as_sequence,
    .tp_as_buffer = &base_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The C base of tnp.ndarray: its two fields and the fast view operations.",
    .tp_traverse = (traverseproc)base_traverse,
    .tp_clear = (inquiry)base_clear,
    .tp_methods = base_methods,
    .tp_members = base_members,
    .tp_getset = base_getset,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------------------------
 * The Python-level protocols of tnp.ndarray and tnp.Scalar (see patch_slots).
 * ------------------------------------------------------------------------------------------ */

/* Whether `x` is a tnp.ndarray or tnp.Scalar (exactly) holding host memory: a NumPy array, or for
 * a Scalar a NumPy scalar. Sets *payload and *dev (borrowed). */
static inline int
host_value(PyObject *x, PyObject **payload, PyObject **dev)
{
    PyTypeObject *t = Py_TYPE(x);
    if (t != nd_type && t != scalar_type)
        return 0;
    PyObject *a = ((ArrayBase *)x)->a;
    if (a == NULL)
        return 0;
    if (Py_TYPE(a) == np_ndarray || (t == scalar_type && is_numeric_type(Py_TYPE(a)))) {
        *payload = a;
        *dev = ((ArrayBase *)x)->dev;
        return 1;
    }
    return 0;
}

/* Python numbers, and NumPy's numeric scalars: what meets a host value in the fast paths. */
static inline int
plain_number(PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    return t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type || t == &PyComplex_Type ||
           is_numeric_type(t);
}

/* Wrap a backend result (stolen) as the Python operators do (wrap_scalarize): arrays -> ndarray,
 * NumPy numeric scalars -> Scalar, anything else through the Python function. */
static PyObject *
wrap_result(PyObject *r, PyObject *dev)
{
    if (r == NULL)
        return NULL;
    if (Py_TYPE(r) == np_ndarray)
        return wrap_new(r, dev);
    if (is_numeric_type(Py_TYPE(r)))
        return wrap_scalar(r, dev);
    PyObject *o = PyObject_CallFunctionObjArgs(py_wrap_scalarize, r, dev, NULL);
    Py_DECREF(r);
    return o;
}

/* wrap(r, dev): ndarray.wrap in C, what every fast path of a call returns through: an exact NumPy
 * array -> tnp.ndarray, a NumPy numeric scalar -> tnp.Scalar, anything else through the Python
 * function (_wrap_other). */
static PyObject *
wrap_fast(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "wrap(r, dev) takes 2 arguments");
        return NULL;
    }
    PyObject *r = args[0];
    if (nd_type != NULL && Py_TYPE(r) == np_ndarray) {
        Py_INCREF(r);
        return wrap_new(r, args[1]);
    }
    if (scalar_type != NULL && is_numeric_type(Py_TYPE(r))) {
        Py_INCREF(r);
        return wrap_scalar(r, args[1]);
    }
    if (py_wrap_other == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_Vectorcall(py_wrap_other, args, 2, NULL);
}

/* wrap_from(r, dev, src): ndarray.wrap_from in C (a method's result): `src` itself where `r` is
 * its backend array, a view linked to it; anything else through the Python function. */
static PyObject *py_wrap_from = NULL, *py_wrap_args = NULL;

static PyObject *
wrap_from_fast(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "wrap_from(r, dev, src) takes 3 arguments");
        return NULL;
    }
    PyObject *r = args[0], *src = args[2];
    if (nd_type != NULL && Py_TYPE(src) == nd_type && Py_TYPE(r) == np_ndarray &&
            ((ArrayBase *)src)->dev == args[1]) {
        if (r == ((ArrayBase *)src)->a) {
            Py_INCREF(src);
            return src;
        }
        Py_INCREF(r);
        return wrap_view(r, src);
    }
    if (py_wrap_from == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_Vectorcall(py_wrap_from, args, 3, NULL);
}

/* wrap_args(r, dev, args): ndarray.wrap_args in C (a function's result on the fast path, `args`
 * the call's positional arguments, a tuple): the argument itself where `r` is an argument's own
 * backend value, a view linked to the argument it was made of; tuples and lists in Python. */
static PyObject *
wrap_args_fast(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "wrap_args(r, dev, args) takes 3 arguments");
        return NULL;
    }
    PyObject *r = args[0], *dev = args[1], *srcs = args[2];
    if (nd_type != NULL && PyTuple_CheckExact(srcs)) {
        Py_ssize_t n = PyTuple_GET_SIZE(srcs);
        if (Py_TYPE(r) == np_ndarray) {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *s = PyTuple_GET_ITEM(srcs, i);
                if (Py_TYPE(s) == nd_type && ((ArrayBase *)s)->a == r) {
                    Py_INCREF(s);
                    return s;
                }
            }
            Py_INCREF(r);
            PyObject *o = wrap_new(r, dev);
            if (o != NULL && host_base(r) != NULL) {
                for (Py_ssize_t i = 0; i < n; i++) {
                    PyObject *s = PyTuple_GET_ITEM(srcs, i);
                    if (Py_TYPE(s) != nd_type)
                        continue;
                    int k = link_base(o, s);
                    if (k < 0) {
                        Py_DECREF(o);
                        return NULL;
                    }
                    if (k > 0)
                        break;
                }
            }
            return o;
        }
        if (scalar_type != NULL && is_numeric_type(Py_TYPE(r))) {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *s = PyTuple_GET_ITEM(srcs, i);
                if (Py_TYPE(s) == scalar_type && ((ArrayBase *)s)->a == r) {
                    Py_INCREF(s);
                    return s;
                }
            }
            Py_INCREF(r);
            return wrap_scalar(r, dev);
        }
    }
    if (py_wrap_args == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_Vectorcall(py_wrap_args, args, 3, NULL);
}

/* install_identity(wrap_from, wrap_args): the Python functions the C ones hand the rest to. */
static PyObject *
install_identity(PyObject *mod, PyObject *args)
{
    PyObject *f, *g;
    if (!PyArg_ParseTuple(args, "OO", &f, &g))
        return NULL;
    Py_INCREF(f);
    Py_XSETREF(py_wrap_from, f);
    Py_INCREF(g);
    Py_XSETREF(py_wrap_args, g);
    Py_RETURN_NONE;
}

/* link_base(o, src): as ndarray.link_base, for host arrays; whether it linked (None where C
 * leaves the decision to Python). */
static PyObject *
link_base_py(PyObject *mod, PyObject *args)
{
    PyObject *o, *src;
    if (!PyArg_ParseTuple(args, "O!O!", &ArrayBaseType, &o, &ArrayBaseType, &src))
        return NULL;
    int k = link_base(o, src);
    if (k < 0)
        return NULL;
    return PyBool_FromLong(k);
}

/* Call the Python method `name` of type `t` (found in the class dict, as CPython's slot functions
 * do) with `self` and up to two more arguments; NotImplemented when the type has none. */
static PyObject *
call_py_method(PyTypeObject *t, PyObject *name, PyObject *self, PyObject *x, PyObject *y)
{
    PyObject *f = PyObject_GetAttr((PyObject *)t, name);
    if (f == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return NULL;
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *stack[3] = {self, x, y};
    size_t n = x == NULL ? 1 : (y == NULL ? 2 : 3);
    PyObject *r;
    if (PyFunction_Check(f)) {
        r = PyObject_Vectorcall(f, stack, n, NULL);
    }
    else {   /* another descriptor: bind it as attribute lookup on the instance would */
        descrgetfunc get = Py_TYPE(f)->tp_descr_get;
        if (get != NULL) {
            PyObject *b = get(f, self, (PyObject *)t);
            Py_DECREF(f);
            if (b == NULL)
                return NULL;
            f = b;
        }
        r = PyObject_Vectorcall(f, stack + 1, n - 1, NULL);
    }
    Py_DECREF(f);
    return r;
}

/* ---- binary operators: one list makes the enum, the Python names, the slot offsets, the
 * abstract-API functions (Python's own operator) and the slot functions. A row is
 * X(op, the Python method's name, the PyNumberMethods field, the function); `**` is P's row, its
 * slots taking the third argument of pow(). */
static PyObject *number_power(PyObject *a, PyObject *b) { return PyNumber_Power(a, b, Py_None); }

#define FOR_EACH_BINOP(X, P) \
    X(OP_ADD, add, add, PyNumber_Add) X(OP_SUB, sub, subtract, PyNumber_Subtract) \
    X(OP_MUL, mul, multiply, PyNumber_Multiply) \
    X(OP_TRUEDIV, truediv, true_divide, PyNumber_TrueDivide) \
    X(OP_FLOORDIV, floordiv, floor_divide, PyNumber_FloorDivide) \
    X(OP_MOD, mod, remainder, PyNumber_Remainder) P(OP_POW, pow, power, number_power) \
    X(OP_MATMUL, matmul, matrix_multiply, PyNumber_MatrixMultiply) \
    X(OP_AND, and, and, PyNumber_And) X(OP_OR, or, or, PyNumber_Or) \
    X(OP_XOR, xor, xor, PyNumber_Xor) X(OP_LSHIFT, lshift, lshift, PyNumber_Lshift) \
    X(OP_RSHIFT, rshift, rshift, PyNumber_Rshift)
#define BINOP_ENUM(K, NAME, FIELD, FN) K,
#define BINOP_NAME(K, NAME, FIELD, FN) #NAME,
#define BINOP_OFF(K, NAME, FIELD, FN) offsetof(PyNumberMethods, nb_##FIELD),
#define BINOP_IOFF(K, NAME, FIELD, FN) offsetof(PyNumberMethods, nb_inplace_##FIELD),
#define BINOP_FN(K, NAME, FIELD, FN) FN,
#define BINOP_SLOT(K, NAME, FIELD, FN) slot_##NAME,
#define BINOP_ISLOT(K, NAME, FIELD, FN) islot_##NAME,
enum {FOR_EACH_BINOP(BINOP_ENUM, BINOP_ENUM) N_BINOPS};
static const char *binop_names[N_BINOPS] = {FOR_EACH_BINOP(BINOP_NAME, BINOP_NAME)};
static PyObject *binop_l[N_BINOPS], *binop_r[N_BINOPS], *binop_i[N_BINOPS];   /* "__add__"... */
static const size_t binop_off[N_BINOPS] = {FOR_EACH_BINOP(BINOP_OFF, BINOP_OFF)};
static const size_t binop_ioff[N_BINOPS] = {FOR_EACH_BINOP(BINOP_IOFF, BINOP_IOFF)};
static const binaryfunc number_fn[N_BINOPS] = {FOR_EACH_BINOP(BINOP_FN, BINOP_FN)};
static void *binop_slot[N_BINOPS];    /* the C slot functions below, by op */
static void *binop_islot[N_BINOPS];

static PyObject *
number_op(int k, PyObject *a, PyObject *b)
{
    return number_fn[k](a, b);
}

/* `a op b` computed here when both are host values on one device, or one is a host value and the
 * other a plain number: the backend's own operator on the backend objects, which is what the
 * Python operators compute for these operands (NumPy's ufunc for arrays, NumPy's scalar math for
 * two scalars). NULL without an error: not taken. An error: the Python path runs again and raises
 * it with the operation named. */
static PyObject *
fast_binop(int k, PyObject *a, PyObject *b)
{
    PyObject *pa, *pb, *da, *db;
    int ha = host_value(a, &pa, &da), hb = host_value(b, &pb, &db);
    if (ha && hb) {
        if (da != db)
            return NULL;               /* the Python path raises the device mismatch */
    }
    else if (ha && plain_number(b)) {
        pb = b;
    }
    else if (hb && plain_number(a)) {
        pa = a;
        da = db;
    }
    else
        return NULL;
    if (k == OP_MATMUL && (Py_TYPE(pa) != np_ndarray || Py_TYPE(pb) != np_ndarray))
        return NULL;                   /* NumPy's scalars have no `@`: its error, from Python */
    PyObject *r = number_op(k, pa, pb);
    if (r == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (Py_TYPE(r) == np_ndarray)
        return wrap_new(r, da);
    if (is_numeric_type(Py_TYPE(r)))
        return wrap_scalar(r, da);
    /* Python's own number (`1j * np.float64(2)` is complex's multiplication, float64 being a
     * float): the Python path makes it a tnp value */
    Py_DECREF(r);
    return NULL;
}

static inline int
has_binop_slot(PyTypeObject *t, int k)
{
    return t->tp_as_number != NULL &&
           *(void **)((char *)t->tp_as_number + binop_off[k]) == binop_slot[k];
}

/* CPython's slot dispatch for a class whose __op__/__rop__ are Python functions (SLOT1BINFULL in
 * Objects/typeobject.c), with our C slot standing for the generic one. */
static PyObject *
slow_binop(int k, PyObject *a, PyObject *b, PyObject *mod)
{
    PyTypeObject *ta = Py_TYPE(a), *tb = Py_TYPE(b);
    if (mod != NULL && mod != Py_None) {   /* three-argument pow: __pow__ only */
        if (has_binop_slot(ta, k))
            return call_py_method(ta, binop_l[k], a, b, mod);
        Py_RETURN_NOTIMPLEMENTED;
    }
    int do_other = ta != tb && has_binop_slot(tb, k);
    if (has_binop_slot(ta, k)) {
        PyObject *r;
        if (do_other && PyType_IsSubtype(tb, ta)) {
            /* the subclass's reflected method first, where it has its own */
            PyObject *fa = PyObject_GetAttr((PyObject *)ta, binop_r[k]);
            PyObject *fb = fa == NULL ? NULL : PyObject_GetAttr((PyObject *)tb, binop_r[k]);
            int over = fb != NULL && fa != fb;
            Py_XDECREF(fa);
            Py_XDECREF(fb);
            if (PyErr_Occurred())
                PyErr_Clear();
            if (over) {
                r = call_py_method(tb, binop_r[k], b, a, NULL);
                if (r != Py_NotImplemented)
                    return r;
                Py_DECREF(r);
                do_other = 0;
            }
        }
        r = call_py_method(ta, binop_l[k], a, b, NULL);
        if (r != Py_NotImplemented || ta == tb)
            return r;
        Py_DECREF(r);
    }
    if (do_other)
        return call_py_method(tb, binop_r[k], b, a, NULL);
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *
binop(int k, PyObject *a, PyObject *b)
{
    if (!hook_on) {
        PyObject *r = fast_binop(k, a, b);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    return slow_binop(k, a, b, NULL);
}

/* a Scalar's `s op= x`: a new value (scalars are immutable), computed as `s op x` */
static PyObject *
inplace_binop(int k, PyObject *a, PyObject *b)
{
    if (!hook_on && Py_TYPE(a) == scalar_type) {
        PyObject *r = fast_binop(k, a, b);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    return call_py_method(Py_TYPE(a), binop_i[k], a, b, NULL);
}

#define BINOP_SLOTS(K, NAME, FIELD, FN) \
    static PyObject *slot_##NAME(PyObject *a, PyObject *b) { return binop(K, a, b); } \
    static PyObject *islot_##NAME(PyObject *a, PyObject *b) { return inplace_binop(K, a, b); }
#define NO_SLOTS(K, NAME, FIELD, FN)
FOR_EACH_BINOP(BINOP_SLOTS, NO_SLOTS)

static PyObject *
slot_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod == Py_None)
        return binop(OP_POW, a, b);
    return slow_binop(OP_POW, a, b, mod);
}

static PyObject *
islot_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod == Py_None)
        return inplace_binop(OP_POW, a, b);
    return call_py_method(Py_TYPE(a), binop_i[OP_POW], a, b, mod);
}

/* ---- comparisons */
static PyObject *cmp_names[6];   /* "__lt__", ... by Py_LT... */

static PyObject *
slot_richcompare(PyObject *self, PyObject *other, int op)
{
    if (!hook_on) {
        PyObject *pa, *pb, *da, *db;
        if (host_value(self, &pa, &da)) {
            int ok = 0;
            if (host_value(other, &pb, &db))
                ok = da == db;
            else if (plain_number(other)) {
                pb = other;
                ok = 1;
            }
            if (ok) {
                PyObject *r = PyObject_RichCompare(pa, pb, op);
                if (r != NULL)
                    return wrap_result(r, da);
                PyErr_Clear();
            }
        }
    }
    return call_py_method(Py_TYPE(self), cmp_names[op], self, other, NULL);
}

/* ---- unary operators */
enum {UN_NEG, UN_POS, UN_ABS, UN_INVERT, N_UNOPS};
static PyObject *unop_names[N_UNOPS];

static PyObject *
unop(int k, PyObject *self)
{
    PyObject *p, *d;
    if (!hook_on && host_value(self, &p, &d)) {
        PyObject *r = k == UN_NEG ? PyNumber_Negative(p) : k == UN_POS ? PyNumber_Positive(p) :
                      k == UN_ABS ? PyNumber_Absolute(p) : PyNumber_Invert(p);
        if (r != NULL)
            return wrap_result(r, d);
        PyErr_Clear();
    }
    return call_py_method(Py_TYPE(self), unop_names[k], self, NULL, NULL);
}

static PyObject *slot_neg(PyObject *s) { return unop(UN_NEG, s); }
static PyObject *slot_pos(PyObject *s) { return unop(UN_POS, s); }
static PyObject *slot_abs(PyObject *s) { return unop(UN_ABS, s); }
static PyObject *slot_invert(PyObject *s) { return unop(UN_INVERT, s); }

/* ---- conversions, len, hash: the Python methods are these on the backend object, for every
 * backend (the subclasses that define their own get CPython's slots, not these) */
static int
slot_bool(PyObject *self)
{
    return PyObject_IsTrue(((ArrayBase *)self)->a);
}

static PyObject *
slot_float(PyObject *self)
{
    return PyNumber_Float(((ArrayBase *)self)->a);
}

static PyObject *
slot_int(PyObject *self)
{
    return PyNumber_Long(((ArrayBase *)self)->a);
}

static PyObject *
slot_index(PyObject *self)
{
    return PyNumber_Index(((ArrayBase *)self)->a);
}

static Py_ssize_t
slot_len(PyObject *self)
{
    return PyObject_Size(((ArrayBase *)self)->a);
}

static PyObject *str_hash = NULL;

static Py_hash_t
slot_scalar_hash(PyObject *self)
{
    PyObject *a = ((ArrayBase *)self)->a;
    if (a != NULL && is_numeric_type(Py_TYPE(a)))
        return PyObject_Hash(a);
    PyObject *r = call_py_method(Py_TYPE(self), str_hash, self, NULL, NULL);
    if (r == NULL)
        return -1;
    Py_hash_t h = PyLong_AsSsize_t(r);
    Py_DECREF(r);
    return h;
}

/* ---- iteration: x[0], x[1], ... as the Python __iter__ gives them */
typedef struct {
    PyObject_HEAD
    PyObject *arr;      /* the tnp.ndarray */
    Py_ssize_t i, n;
} ArrayIter;

static int
iter_traverse(ArrayIter *it, visitproc visit, void *arg)
{
    Py_VISIT(it->arr);
    return 0;
}

static void
iter_dealloc(ArrayIter *it)
{
    PyObject_GC_UnTrack(it);
    Py_CLEAR(it->arr);
    PyObject_GC_Del(it);
}

static PyObject *
iter_next(ArrayIter *it)
{
    if (it->arr == NULL || it->i >= it->n)
        return NULL;
    Py_ssize_t i = it->i++;
    return base_sq_item(it->arr, i);   /* the fast path, or x[i] through the Python method */
}

static PyObject *
iter_length_hint(ArrayIter *it, PyObject *unused)
{
    return PyLong_FromSsize_t(it->arr == NULL || it->i >= it->n ? 0 : it->n - it->i);
}

static PyMethodDef iter_methods[] = {
    {"__length_hint__", (PyCFunction)iter_length_hint, METH_NOARGS, NULL},
    {NULL}
};

static PyTypeObject ArrayIterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tnp._core._speedups.ndarray_iterator",
    .tp_basicsize = sizeof(ArrayIter),
    .tp_dealloc = (destructor)iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)iter_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_methods = iter_methods,
};

static PyObject *str_iter = NULL;

static PyObject *
slot_iter(PyObject *self)
{
    PyObject *a = ((ArrayBase *)self)->a;
    if (layout_ok && Py_TYPE(self) == nd_type && a != NULL && Py_TYPE(a) == np_ndarray) {
        np_array_head *h = (np_array_head *)a;
        if (h->nd == 0) {
            PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
            return NULL;
        }
        ArrayIter *it = PyObject_GC_New(ArrayIter, &ArrayIterType);
        if (it == NULL)
            return NULL;
        Py_INCREF(self);
        it->arr = self;
        it->i = 0;
        it->n = h->dimensions[0];
        PyObject_GC_Track(it);
        return (PyObject *)it;
    }
    return call_py_method(Py_TYPE(self), str_iter, self, NULL, NULL);
}

/* ---- item assignment, and the version counter it bumps */

/* ndarray.bump_version(a) for a NumPy array: the counter of its root buffer is in `versions`,
 * keyed by id(root), as [count, weakref(root)]; a missing or stale entry is made by Python. */
static PyObject *last_entry = NULL;   /* the entry of the last root written (a strong reference) */

/* Whether `e` is a live [count, weakref(root)] entry for `r`. */
static inline int
entry_of(PyObject *e, PyObject *r)
{
    return e != NULL && PyList_CheckExact(e) && PyList_GET_SIZE(e) == 2 &&
           PyLong_CheckExact(PyList_GET_ITEM(e, 0)) && PyWeakref_CheckRef(PyList_GET_ITEM(e, 1)) &&
           PyWeakref_GetObject(PyList_GET_ITEM(e, 1)) == r;
}

static int
bump_host_version(PyObject *a)
{
    PyObject *r = a;
    PyObject *b = ((np_array_head *)r)->base;
    while (b != NULL && PyObject_TypeCheck(b, np_ndarray)) {
        r = b;
        b = ((np_array_head *)r)->base;
    }
    /* a loop writes one array over and over: its entry is kept (the weakref check says whether
     * it is still this root's: a root that died leaves a dead one) */
    PyObject *e = last_entry;
    if (!entry_of(e, r)) {
        PyObject *key = PyLong_FromVoidPtr(r);
        if (key == NULL)
            return -1;
        e = PyDict_GetItemWithError(versions, key);
        Py_DECREF(key);
        if (!entry_of(e, r)) {
            if (PyErr_Occurred())
                return -1;
            PyObject *res = PyObject_CallOneArg(py_bump_version, a);   /* makes the entry */
            if (res == NULL)
                return -1;
            Py_DECREF(res);
            return 0;
        }
        Py_INCREF(e);
        Py_XSETREF(last_entry, e);
    }
    long c = PyLong_AsLong(PyList_GET_ITEM(e, 0));
    if (c == -1 && PyErr_Occurred())
        return -1;
    PyObject *nc = PyLong_FromLong(c + 1);
    if (nc == NULL)
        return -1;
    PyList_SetItem(e, 0, nc);   /* steals nc, drops the old count */
    return 0;
}

/* bump_version(a): ndarray.bump_version in C for a NumPy array; the Python function for anything
 * else (and for a root whose counter it has not made yet) */
static PyObject *
bump_version_fast(PyObject *mod, PyObject *a)
{
    if (layout_ok && versions != NULL && np_ndarray != NULL && PyObject_TypeCheck(a, np_ndarray)) {
        if (bump_host_version(a) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (py_bump_version == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tnp._speedups: not installed");
        return NULL;
    }
    return PyObject_CallOneArg(py_bump_version, a);
}

static PyObject *str_setitem = NULL;

static int
slot_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    if (layout_ok && versions != NULL && fast_ok(self) && simple_key(key)) {
        PyObject *v = NULL, *p, *d;
        PyTypeObject *tv = Py_TYPE(value);
        if (tv == &PyFloat_Type || tv == &PyLong_Type || tv == &PyBool_Type || tv == &PyComplex_Type)
            v = value;
        else if (host_value(value, &p, &d) && d == ((ArrayBase *)self)->dev)
            v = p;
        if (v != NULL) {
            PyObject *a = ((ArrayBase *)self)->a;
            if (PyObject_SetItem(a, key, v) == 0)
                return bump_host_version(a);
            PyErr_Clear();   /* the Python path raises it, naming the operation */
        }
    }
    PyObject *r = call_py_method(Py_TYPE(self), str_setitem, self, key, value);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* patch_slots(cls, kind): point cls's slots at the functions above ("array": tnp.ndarray,
 * "scalar": tnp.Scalar). The class keeps its Python methods, which the slow paths call. */
static int
set_slot(PyTypeObject *t, size_t off, void *fn)
{
    if (t->tp_as_number == NULL)
        return -1;
    *(void **)((char *)t->tp_as_number + off) = fn;
    return 0;
}

static PyObject *
patch_slots(PyObject *mod, PyObject *args)
{
    PyObject *cls;
    const char *kind;
    if (!PyArg_ParseTuple(args, "Os:patch_slots", &cls, &kind))
        return NULL;
    if (!PyType_Check(cls) || !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
            !PyType_IsSubtype((PyTypeObject *)cls, &ArrayBaseType) ||
            ((PyTypeObject *)cls)->tp_as_number == NULL || ((PyTypeObject *)cls)->tp_as_mapping == NULL ||
            ((PyTypeObject *)cls)->tp_as_sequence == NULL) {
        PyErr_SetString(PyExc_TypeError, "patch_slots: expected a Python subclass of ArrayBase");
        return NULL;
    }
    int scalar = strcmp(kind, "scalar") == 0;
    if (!scalar && strcmp(kind, "array") != 0) {
        PyErr_SetString(PyExc_ValueError, "patch_slots: kind must be 'array' or 'scalar'");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    for (int k = 0; k < N_BINOPS; k++) {
        set_slot(t, binop_off[k], binop_slot[k]);
        if (scalar)   /* an array's in-place operators write in place: Python (the tape sees them) */
            set_slot(t, binop_ioff[k], binop_islot[k]);
    }
    set_slot(t, offsetof(PyNumberMethods, nb_negative), (void *)slot_neg);
    set_slot(t, offsetof(PyNumberMethods, nb_positive), (void *)slot_pos);
    set_slot(t, offsetof(PyNumberMethods, nb_absolute), (void *)slot_abs);
    set_slot(t, offsetof(PyNumberMethods, nb_invert), (void *)slot_invert);
    set_slot(t, offsetof(PyNumberMethods, nb_bool), (void *)slot_bool);
    set_slot(t, offsetof(PyNumberMethods, nb_float), (void *)slot_float);
    set_slot(t, offsetof(PyNumberMethods, nb_int), (void *)slot_int);
    set_slot(t, offsetof(PyNumberMethods, nb_index), (void *)slot_index);
    t->tp_richcompare = slot_richcompare;
    if (scalar) {
        t->tp_hash = slot_scalar_hash;
        if (t->tp_dictoffset == 0 && t->tp_del == NULL && t->tp_finalize == NULL)
            t->tp_dealloc = scalar_dealloc;   /* a free list (see wrap_scalar) */
    }
    else {
        t->tp_as_mapping->mp_length = slot_len;
        t->tp_as_sequence->sq_length = slot_len;
        t->tp_as_mapping->mp_ass_subscript = slot_ass_subscript;
        t->tp_iter = slot_iter;
    }
    PyType_Modified(t);
    Py_RETURN_NONE;
}

/* slots_patched(cls, kind): whether cls's slots are still these (a later assignment of a dunder to
 * the class, e.g. `tnp.ndarray.__add__ = f`, puts CPython's generic slot back: correct, slower). */
static PyObject *
slots_patched(PyObject *mod, PyObject *args)
{
    PyObject *cls;
    const char *kind;
    if (!PyArg_ParseTuple(args, "Os:slots_patched", &cls, &kind) || !PyType_Check(cls))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)cls;
    int scalar = strcmp(kind, "scalar") == 0;
    int ok = t->tp_as_number != NULL && t->tp_richcompare == slot_richcompare &&
             t->tp_as_number->nb_bool == slot_bool && t->tp_as_number->nb_float == slot_float &&
             t->tp_as_number->nb_index == slot_index && t->tp_as_number->nb_negative == slot_neg;
    for (int k = 0; ok && k < N_BINOPS; k++) {
        ok = has_binop_slot(t, k);
        if (ok && scalar)
            ok = *(void **)((char *)t->tp_as_number + binop_ioff[k]) == binop_islot[k];
    }
    if (ok && scalar)
        ok = t->tp_hash == slot_scalar_hash;
    if (ok && !scalar)
        ok = t->tp_iter == slot_iter && t->tp_as_mapping->mp_ass_subscript == slot_ass_subscript &&
             t->tp_as_mapping->mp_length == slot_len;
    return PyBool_FromLong(ok);
}

/* install_scalars(Scalar, numeric_types, wrap_scalarize, versions, bump_version, layout_ok,
 *                 wrap_other) */
static PyObject *
install_scalars(PyObject *mod, PyObject *args)
{
    PyObject *st, *types, *wsc, *vers, *bump, *wother;
    int lay;
    if (!PyArg_ParseTuple(args, "OO!OO!OpO:install_scalars", &st, &PyTuple_Type, &types, &wsc,
                          &PyDict_Type, &vers, &bump, &lay, &wother))
        return NULL;
    if (!PyType_Check(st) || !PyType_IsSubtype((PyTypeObject *)st, &ArrayBaseType) ||
            PyTuple_GET_SIZE(types) > MAX_NUMERIC) {
        PyErr_SetString(PyExc_TypeError, "install_scalars: expected tnp.Scalar and at most 32 types");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++)
        if (!PyType_Check(PyTuple_GET_ITEM(types, i))) {
            PyErr_SetString(PyExc_TypeError, "install_scalars: numeric_types must be types");
            return NULL;
        }
    n_numeric = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
        PyObject *t = PyTuple_GET_ITEM(types, i);
        Py_INCREF(t);
        numeric_types[n_numeric++] = (PyTypeObject *)t;
    }
    Py_INCREF(st); Py_XSETREF(scalar_type, (PyTypeObject *)st);
    Py_INCREF(wsc); Py_XSETREF(py_wrap_scalarize, wsc);
    Py_INCREF(wother); Py_XSETREF(py_wrap_other, wother);
    Py_INCREF(vers); Py_XSETREF(versions, vers);
    Py_INCREF(bump); Py_XSETREF(py_bump_version, bump);
    layout_ok = lay;
    Py_CLEAR(host_true);
    Py_CLEAR(host_false);
    if (host_device != NULL && host_device != Py_None) {
        PyObject *b = PyObject_CallOneArg((PyObject *)numeric_types[0], Py_True);
        PyObject *c = b == NULL ? NULL : PyObject_CallOneArg((PyObject *)numeric_types[0], Py_False);
        if (c == NULL) {
            Py_XDECREF(b);
            return NULL;
        }
        /* numeric_types[0] is numpy.bool_: these are NumPy's two booleans */
        PyObject *tt = wrap_scalar(b, host_device), *ff = tt == NULL ? NULL : wrap_scalar(c, host_device);
        if (ff == NULL) {
            Py_XDECREF(tt);
            return NULL;
        }
        host_true = tt;
        host_false = ff;
    }
    Py_RETURN_NONE;
}

/* array_head(a): what the mirrored NumPy struct fields read for array `a` (ndim, shape[0] or None,
 * base, dtype, dtype.kind), for Python to compare with NumPy's own answers (check_layout). */
static PyObject *
array_head(PyObject *mod, PyObject *a)
{
    if (np_ndarray == NULL || Py_TYPE(a) != np_ndarray) {
        PyErr_SetString(PyExc_TypeError, "array_head: expected a numpy.ndarray (after install)");
        return NULL;
    }
    np_array_head *h = (np_array_head *)a;
    PyObject *base = h->base ? h->base : Py_None;
    PyObject *d0 = h->nd > 0 ? PyLong_FromSsize_t(h->dimensions[0]) : (Py_INCREF(Py_None), Py_None);
    if (d0 == NULL)
        return NULL;
    char kind = ((np_descr_head *)h->descr)->kind;
    return Py_BuildValue("iNOOC", h->nd, d0, base, h->descr, (int)(unsigned char)kind);
}

static PyObject *
install(PyObject *mod, PyObject *args)
{
    PyObject *nd, *npnd, *gi, *t, *rs, *br = Py_None, *gen = Py_None, *host = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOO|OOO:install", &nd, &npnd, &gi, &t, &rs, &br, &gen, &host))
        return NULL;
    if (!PyType_Check(nd) || !PyType_Check(npnd)) {
        PyErr_SetString(PyExc_TypeError, "install: expected the tnp.ndarray and numpy.ndarray types");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)nd, &ArrayBaseType)) {
        PyErr_SetString(PyExc_TypeError, "install: tnp.ndarray must derive from ArrayBase");
        return NULL;
    }
    Py_INCREF(nd); Py_XSETREF(nd_type, (PyTypeObject *)nd);
    Py_INCREF(npnd); Py_XSETREF(np_ndarray, (PyTypeObject *)npnd);
    Py_INCREF(gi); Py_XSETREF(slow_getitem, gi);
    Py_INCREF(t); Py_XSETREF(slow_T, t);
    Py_INCREF(rs); Py_XSETREF(slow_reshape, rs);
    if (br != Py_None) {
        Py_INCREF(br);
        Py_XSETREF(buffer_refusal, br);
    }
    Py_INCREF(host);
    Py_XSETREF(host_device, host);
    if (gen != Py_None) {
        if (!PyType_Check(gen)) {
            PyErr_SetString(PyExc_TypeError, "install: expected the numpy.generic type");
            return NULL;
        }
        Py_INCREF(gen);
        Py_XSETREF(np_generic, (PyTypeObject *)gen);
    }
    Py_RETURN_NONE;
}

static PyObject *
set_hook(PyObject *mod, PyObject *hook)
{
    hook_on = (hook != Py_None);
    Py_RETURN_NONE;
}

/* drop_buffer(cls): `cls` (tnp.Scalar) exports no buffer at all, so PyObject_CheckBuffer is false
 * and numpy.asarray goes straight on to __array__ instead of failing a buffer request first (it
 * does so once per element of numpy.array([s1, s2, ...])). Its subclasses inherit the base's
 * slot again, which refuses scalars. */
static PyObject *
drop_buffer(PyObject *mod, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &ArrayBaseType) ||
            !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError, "drop_buffer: expected a Python subclass of ArrayBase");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    if (t->tp_as_buffer != NULL && t->tp_as_buffer != &base_as_buffer) {
        t->tp_as_buffer->bf_getbuffer = NULL;
        t->tp_as_buffer->bf_releasebuffer = NULL;
    }
    PyType_Modified(t);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"install", install, METH_VARARGS,
     "install(ndarray, numpy_ndarray, getitem, T, reshape[, buffer_check, numpy_generic, host_device]): "
     "register the Python fallbacks, the check that raises for arrays without a buffer, NumPy's "
     "scalar type and the device whose arrays export their buffer"},
    {"patch_slots", patch_slots, METH_VARARGS,
     "patch_slots(cls, kind): cls's operators, comparisons, conversions, len, iteration and item "
     "assignment ('array') or operators, comparisons, conversions and hash ('scalar') run here"},
    {"slots_patched", slots_patched, METH_VARARGS,
     "slots_patched(cls, kind): whether patch_slots(cls, kind) is still in effect"},
    {"install_scalars", install_scalars, METH_VARARGS,
     "install_scalars(Scalar, numeric_types, wrap_scalarize, versions, bump_version, layout_ok, "
     "wrap_other)"},
    {"wrap", (PyCFunction)(void (*)(void))wrap_fast, METH_FASTCALL,
     "wrap(r, dev): ndarray.wrap (a backend result as a tnp value on dev), in C"},
    {"wrap_from", (PyCFunction)(void (*)(void))wrap_from_fast, METH_FASTCALL,
     "wrap_from(r, dev, src): ndarray.wrap_from (a method's result, related to its array), in C"},
    {"wrap_args", (PyCFunction)(void (*)(void))wrap_args_fast, METH_FASTCALL,
     "wrap_args(r, dev, args): ndarray.wrap_args (a function's result, related to its arguments), in C"},
    {"install_identity", install_identity, METH_VARARGS,
     "install_identity(wrap_from, wrap_args): the Python functions for what C leaves"},
    {"link_base", link_base_py, METH_VARARGS,
     "link_base(o, src): the C part of ndarray.link_base (host arrays)"},
    {"bump_version", bump_version_fast, METH_O,
     "bump_version(a): ndarray.bump_version (a write into backend array a), in C"},
    {"array_head", array_head, METH_O,
     "array_head(a): (ndim, shape[0], base, dtype, kind) as read from NumPy's struct"},
    {"drop_buffer", drop_buffer, METH_O,
     "drop_buffer(cls): instances of the subclass cls export no buffer"},
    {"set_hook", set_hook, METH_O,
     "set_hook(hook_or_None): whether a recording hook is installed (fast paths step aside)"},
    {NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "Optional C accelerator for tnp.ndarray's view operations.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&ArrayBaseType) < 0 || PyType_Ready(&ArrayIterType) < 0)
        return NULL;
    void *slots[N_BINOPS] = {FOR_EACH_BINOP(BINOP_SLOT, BINOP_SLOT)};
    void *islots[N_BINOPS] = {FOR_EACH_BINOP(BINOP_ISLOT, BINOP_ISLOT)};
    char buf[32];
    for (int k = 0; k < N_BINOPS; k++) {
        binop_slot[k] = slots[k];
        binop_islot[k] = islots[k];
        snprintf(buf, sizeof buf, "__%s__", binop_names[k]);
        binop_l[k] = PyUnicode_InternFromString(buf);
        snprintf(buf, sizeof buf, "__r%s__", binop_names[k]);
        binop_r[k] = PyUnicode_InternFromString(buf);
        snprintf(buf, sizeof buf, "__i%s__", binop_names[k]);
        binop_i[k] = PyUnicode_InternFromString(buf);
        if (!binop_l[k] || !binop_r[k] || !binop_i[k])
            return NULL;
    }
    const char *cmps[6] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};
    for (int k = 0; k < 6; k++)
        if ((cmp_names[k] = PyUnicode_InternFromString(cmps[k])) == NULL)
            return NULL;
    const char *uns[N_UNOPS] = {"__neg__", "__pos__", "__abs__", "__invert__"};
    for (int k = 0; k < N_UNOPS; k++)
        if ((unop_names[k] = PyUnicode_InternFromString(uns[k])) == NULL)
            return NULL;
    str_hash = PyUnicode_InternFromString("__hash__");
    str_iter = PyUnicode_InternFromString("__iter__");
    str_setitem = PyUnicode_InternFromString("__setitem__");
    if (str_hash == NULL || str_iter == NULL || str_setitem == NULL)
        return NULL;
    str_T = PyUnicode_InternFromString("T");
    str_base = PyUnicode_InternFromString("base");
    if (str_base == NULL)
        return NULL;
    str_reshape = PyUnicode_InternFromString("reshape");
    if (str_T == NULL || str_reshape == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ArrayBaseType);
    if (PyModule_AddObject(m, "ArrayBase", (PyObject *)&ArrayBaseType) < 0) {
        Py_DECREF(&ArrayBaseType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
